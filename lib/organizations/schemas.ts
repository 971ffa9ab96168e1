import * as v from 'valibot';
import { domainName } from '#lib/email/addresses.ts';
import { param, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { clearableText, someField, sometimes } from '#lib/validation/patch-fields.ts';
import { optionalField, optionalText, parseInput, requiredText } from '#lib/validation.ts';
import { isSharedDomain } from './shared-domains.ts';
import { MAX_DOMAINS, MAX_EXTERNAL_ID_LENGTH, MAX_NAME_LENGTH } from './types.ts';

/** Request bodies and the list's query of the organization routes, with Laravel's messages. */

const MAX_DOMAIN_LENGTH = 253;

/** What a domain is read as (domainName); a URL, an address or a port is not a domain. */
const asDomain = (message: string) =>
  v.rawTransform<string, string>(({ dataset, addIssue, NEVER }) => {
    const domain = /[\s/\\?#@:]/.test(dataset.value) ? undefined : domainName(dataset.value);
    if (domain !== undefined) return domain;
    addIssue({ message });
    return NEVER;
  });

const domainWire = v.pipe(
  v.string(),
  v.maxLength(MAX_DOMAIN_LENGTH),
  v.metadata({ format: 'idn-hostname' }),
  v.description(
    'A domain name (`acme.example`); compared case-insensitively, an internationalized one in its ASCII form.',
  ),
);

const domainsWire = v.pipe(
  v.array(domainWire),
  v.maxLength(MAX_DOMAINS),
  v.description(
    'The domains its people write from. Each belongs to one organization of the account; free-mail and ' +
      'disposable domains (gmail.com, mailinator.com …) are refused. A domain given twice is kept once.',
  ),
);

/** Domains: each read as a domain (422 on `domains.<i>`), kept once, and none a shared one (422 on `domains`). */
const domainsRules = v.pipe(
  v.array(v.unknown(), 'The domains field must be an array.'),
  v.maxLength(MAX_DOMAINS, `The domains field must not have more than ${MAX_DOMAINS} items.`),
  v.array(
    v.pipe(
      v.string('Each domain must be a string.'),
      v.trim(),
      v.maxLength(MAX_DOMAIN_LENGTH, `A domain must not be greater than ${MAX_DOMAIN_LENGTH} characters.`),
      asDomain('Each domain must be a valid domain name, such as acme.example.'),
    ),
  ),
  v.transform((list) => [...new Set(list)]),
  v.rawCheck<string[]>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    for (const domain of dataset.value.filter(isSharedDomain)) {
      addIssue({
        message: `The domain ${domain} is a free-mail or disposable e-mail domain: no organization may claim it.`,
      });
    }
  }),
);

const name = requiredText('name', MAX_NAME_LENGTH);

/** The `createOrganization` route. */
export const CreateOrganizationSchema = v.object({
  name,
  domains: optionalField(domainsRules, domainsWire),
  external_id: optionalText('external_id', MAX_EXTERNAL_ID_LENGTH),
});

/** The `updateOrganization` route: the fields sent, at least one; `domains` replaces the list. */
const UpdateOrganizationFields = v.object({
  name: sometimes(name),
  domains: sometimes(domainsRules, domainsWire),
  external_id: clearableText('external_id', MAX_EXTERNAL_ID_LENGTH),
});
export const UpdateOrganizationSchema = v.pipe(UpdateOrganizationFields, someField(UpdateOrganizationFields));

export type CreateOrganizationInput = v.InferOutput<typeof CreateOrganizationSchema>;
export type UpdateOrganizationInput = v.InferOutput<typeof UpdateOrganizationSchema>;

export const DEFAULT_ORGANIZATION_LIMIT = 50;
export const MAX_ORGANIZATION_LIMIT = 100;

/** The `listOrganizations` route's query: `after` (an organization id), `limit` (1..100), `domain`. */
export const OrganizationListQueryParams = v.object({
  after: param('after', wholeNumber('after', 0), wholeNumberWire(0)),
  limit: param(
    'limit',
    wholeNumber('limit', 1, MAX_ORGANIZATION_LIMIT),
    wholeNumberWire(1, MAX_ORGANIZATION_LIMIT),
  ),
  domain: param(
    'domain',
    v.pipe(
      v.string(),
      v.maxLength(
        MAX_DOMAIN_LENGTH,
        `The domain field must not be greater than ${MAX_DOMAIN_LENGTH} characters.`,
      ),
      asDomain('The domain field must be a valid domain name, such as acme.example.'),
    ),
    domainWire,
  ),
});

export interface OrganizationListQuery {
  /** Organizations with an id above this one (0: from the first). */
  after: number;
  limit: number;
  /** Only the organization holding this domain (as compared: lower-case ASCII). */
  domain?: string | undefined;
}

export function parseOrganizationListQuery(query: Record<string, string[]>): OrganizationListQuery {
  const q = parseInput(OrganizationListQueryParams, query);
  return { after: q.after ?? 0, limit: q.limit ?? DEFAULT_ORGANIZATION_LIMIT, domain: q.domain };
}
