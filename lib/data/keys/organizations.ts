import { createHash } from 'node:crypto';
import { padId } from './sort.ts';

/**
 * Organizations (docs/data-model.md, "Organizations"): one partition per account holding its organizations by id
 * (so the list is one Query in id order, and `after` a key bound), and the claims that make a name and each domain
 * belong to one organization: a domain's claim holds a copy of its organization (the `domain` filter is one
 * GetItem), a name's only the id. Claims sort apart from the organizations (`DOMAIN#`, `NAME#` < `ORGANIZATION#`).
 */
const partition = (accountId: string) => `ORGANIZATIONS#${accountId}`;
const ORGANIZATION = 'ORGANIZATION#';

export const organizationKeys = {
  partition,
  organization: (accountId: string, id: number) => ({
    pk: partition(accountId),
    sk: `${ORGANIZATION}${padId(id)}`,
  }),
  /** The sort key range of the organizations with an id above `after` (0: all of them). */
  idsAbove: (after: number) => ({ from: `${ORGANIZATION}${padId(after + 1)}`, to: `${ORGANIZATION}~` }),
  /** A domain's claim, by the domain in its ASCII form, lower-cased (at most 253 characters). */
  domain: (accountId: string, domain: string) => ({ pk: partition(accountId), sk: `DOMAIN#${domain}` }),
  /**
   * A name's claim, by the SHA-256 of the name as compared (lower-cased): a key of fixed size whatever the name's
   * length and characters. Not keyed: an organization's name is no person's data, and the item holds it anyway.
   */
  name: (accountId: string, comparedName: string) => ({
    pk: partition(accountId),
    sk: `NAME#${createHash('sha256').update(comparedName).digest('hex')}`,
  }),
};
