import { createHash } from 'node:crypto';
import type { IndexName } from '../store/table.ts';
import { dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs, padId } from './sort.ts';

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
  /**
   * A deleted organization's clearing (its tickets' and contacts' `organization` set to null by the clearing
   * runner, lib/organizations/clearing.ts): an item beside the claims until it is done, with its due entry in gsi2
   * (keys only, one of DUE_SHARDS partitions, sorted by when it is next due), which the runner reads, never a Scan.
   */
  clearing: (accountId: string, id: number) => ({ pk: partition(accountId), sk: `CLEARING#${padId(id)}` }),
  clearingDue: (accountId: string, id: number, atMs: number) => ({
    gsi2pk: `ORGANIZATION_CLEARING_DUE#${dueShardOf(accountId, String(id))}`,
    gsi2sk: `${dueMs(atMs)}#${accountId}#${id}`,
  }),
  clearingDuePartition: (shard: number) => `ORGANIZATION_CLEARING_DUE#${shard}`,
  clearingDueIndex: 'gsi2' as IndexName,
  clearingDueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  parseClearingDue: (sk: string) => {
    const [, accountId, id] = sk.split('#');
    return { accountId: accountId ?? '', id: Number(id) };
  },
};
