import * as v from 'valibot';
import { canonicalAddress } from '#lib/email/addresses.ts';
import {
  DEFAULT_PER_PAGE,
  linkParamsOf,
  maxText,
  pageParams,
  param,
  recognisedBy,
} from '#lib/list-params.ts';
import type { PageRequest } from '#lib/pagination.ts';
import { nullableId } from '#lib/tickets/schemas.ts';
import { clearableText, someField, sometimes } from '#lib/validation/patch-fields.ts';
import { parseInput, requiredEmail, requiredText } from '#lib/validation.ts';

/** The `updateContact` route: the account file's rules for each field sent. */
const UpdateContactFields = v.object({
  first_name: sometimes(requiredText('first_name', 255)),
  last_name: clearableText('last_name', 255),
  phone: clearableText('phone', 64),
  email: sometimes(requiredEmail('email')),
  organization_id: nullableId('organization_id'),
});

export const UpdateContactSchema = v.pipe(UpdateContactFields, someField(UpdateContactFields));

export type UpdateContactInput = v.InferOutput<typeof UpdateContactSchema>;

/** The `listContacts` route's query: pagination as tickets, `email` and `search`. */
export const ContactListQueryParams = v.object({
  ...pageParams,
  email: param('email', maxText('email', 254)),
  search: param('search', maxText('search', 255)),
});

export interface ContactListQuery extends PageRequest {
  email?: string;
  search?: string;
}

export function parseContactListQuery(query: Record<string, string[]>): ContactListQuery {
  const q = parseInput(ContactListQueryParams, query);
  return {
    page: q.page ?? 1,
    perPage: q.per_page ?? DEFAULT_PER_PAGE,
    // Compared as addresses are held: an internationalized domain in either form finds the contact.
    ...(q.email !== undefined ? { email: canonicalAddress(q.email) ?? q.email } : {}),
    ...(q.search !== undefined ? { search: q.search } : {}),
    linkParams: linkParamsOf(query, recognisedBy(ContactListQueryParams)),
  };
}
