import * as v from 'valibot';
import { PRIORITIES } from '#lib/accounts/types.ts';
import { canonicalAddress } from '#lib/email/addresses.ts';
import {
  DEFAULT_PER_PAGE,
  linkParamsOf,
  maxText,
  pageParams,
  param,
  picked,
  recognisedBy,
  wholeNumber,
  wholeNumberWire,
} from '#lib/list-params.ts';
import { wire } from '#lib/validation/wire-form.ts';
import { parseInput } from '#lib/validation.ts';
import { CUSTOM_FIELD_KEY, customFieldKeyWire, MAX_CUSTOM_FIELD_STRING } from './schemas.ts';
import { TICKET_STATUSES, type TicketFilter } from './types.ts';

/** The list's query parameters, validated (decisions.md, "Ticket list"). */
export interface ListQuery extends TicketFilter {
  page: number;
  perPage: number;
  search?: string;
  /**
   * `sort=due`: soonest uncompleted service-level due time first (decisions.md, "Reply-based service levels");
   * `sort=queue`: a queue's order (types.ts, queueSortValue), kept for `assignee=unassigned` lists only.
   */
  sort?: 'due' | 'queue';
  /** The recognised parameters as sent, in order, for the pagination links. */
  linkParams: [string, string][];
}

const CUSTOM_FIELD_PARAM = /^custom_fields\[(.*)\]$/;

/**
 * The list's parameters after gathering: each field's rules, and its wire form for the OpenAPI document.
 * `bare_custom_fields` is not a parameter: it catches `custom_fields=` sent without a key.
 */
export const ListQueryParams = v.object({
  ...pageParams,
  status: param('status', picked('status', TICKET_STATUSES)),
  priority: param('priority', picked('priority', PRIORITIES)),
  assignee_id: param('assignee_id', wholeNumber('assignee_id', 1), wholeNumberWire(1)),
  assignee: param('assignee', picked('assignee', ['unassigned'] as const)),
  team_id: param(
    'team_id',
    v.pipe(
      v.string(),
      v.check(
        (s) => s === 'none' || /^[1-9]\d{0,14}$/.test(s),
        'The team id field must be an integer or none.',
      ),
      v.transform((s) => (s === 'none' ? ('none' as const) : Number(s))),
    ),
    v.union([v.literal('none'), wholeNumberWire(1)]),
  ),
  organization_id: param('organization_id', wholeNumber('organization_id', 1), wholeNumberWire(1)),
  requester_email: param('requester_email', maxText('requester_email', 254)),
  search: param('search', maxText('search', 255)),
  sla: param('sla', picked('sla', ['breached'] as const)),
  sort: param('sort', picked('sort', ['due', 'queue'] as const)),
  bare_custom_fields: v.optional(
    v.pipe(
      v.array(v.string()),
      v.check(() => false, 'The custom fields filter must be sent as custom_fields[<key>]=<value>.'),
    ),
  ),
  custom_fields: v.pipe(
    v.array(v.tuple([v.string(), v.array(v.string())])),
    // Sent as custom_fields[<key>]=<value>: a deepObject parameter.
    wire<[string, string[]][]>(
      v.record(customFieldKeyWire, v.pipe(v.string(), v.maxLength(MAX_CUSTOM_FIELD_STRING))),
    ),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      for (const [key, values] of dataset.value) {
        // Below custom_fields: the issue names custom_fields.<key>.
        const path = [{ type: 'object', origin: 'value', input: {}, key, value: values }] as unknown as [
          v.ObjectPathItem,
        ];
        if (!CUSTOM_FIELD_KEY.test(key)) {
          addIssue({
            message: `The custom fields.${key} key must be 1 to 64 letters, digits or underscores.`,
            path,
          });
        } else if (values.length > 1) {
          addIssue({ message: `The custom fields.${key} field must be a single value.`, path });
        } else if ((values[0] ?? '').length > MAX_CUSTOM_FIELD_STRING) {
          // No stored value is longer (lib/tickets/schemas.ts): a longer filter could match nothing anyway.
          addIssue({
            message: `The custom fields.${key} field must not be greater than ${MAX_CUSTOM_FIELD_STRING} characters.`,
            path,
          });
        }
      }
    }),
    v.transform((entries) => entries.map(([key, values]): [string, string] => [key, values[0] ?? ''])),
  ),
});

/**
 * The `listTickets` route's query: the scalar parameters, and `custom_fields[<key>]` filters gathered under
 * `custom_fields` (a bare `custom_fields=` is a 422: filters are sent with a key).
 */
export const ListQuerySchema = v.pipe(
  v.record(v.string(), v.array(v.string())),
  v.transform(
    (query): Record<string, unknown> => ({
      ...query,
      custom_fields: Object.entries(query).flatMap(([name, values]) => {
        const key = CUSTOM_FIELD_PARAM.exec(name)?.[1];
        return key === undefined ? [] : [[key, values] as [string, string[]]];
      }),
      bare_custom_fields: query.custom_fields,
    }),
  ),
  ListQueryParams,
  // A queue is the unassigned tickets of a team: team_id and sort=queue are kept for those lists only.
  v.forward(
    v.check(
      (q) => q.team_id === undefined || q.assignee === 'unassigned',
      'The team id filter needs assignee=unassigned.',
    ),
    ['team_id'],
  ),
  v.forward(
    v.check(
      (q) => q.sort !== 'queue' || q.assignee === 'unassigned',
      'The queue sort needs assignee=unassigned.',
    ),
    ['sort'],
  ),
);

export function parseListQuery(query: Record<string, string[]>): ListQuery {
  const q = parseInput(ListQuerySchema, query);
  // Pagination links repeat the recognised parameters as sent, after `page`.
  const linkParams = linkParamsOf(
    query,
    (name) =>
      (recognisedBy(ListQueryParams)(name) && name !== 'custom_fields' && name !== 'bare_custom_fields') ||
      CUSTOM_FIELD_PARAM.test(name),
  );
  return {
    page: q.page ?? 1,
    perPage: q.per_page ?? DEFAULT_PER_PAGE,
    ...(q.status ? { status: q.status } : {}),
    ...(q.priority ? { priority: q.priority } : {}),
    ...(q.assignee_id !== undefined ? { assigneeId: q.assignee_id } : {}),
    ...(q.assignee === 'unassigned'
      ? { unassigned: q.team_id === undefined ? {} : { teamId: q.team_id } }
      : {}),
    ...(q.organization_id !== undefined ? { organizationId: q.organization_id } : {}),
    // Compared as addresses are held: an internationalized domain in either form finds the requester.
    ...(q.requester_email !== undefined
      ? { requesterEmail: canonicalAddress(q.requester_email) ?? q.requester_email }
      : {}),
    ...(q.search !== undefined ? { search: q.search } : {}),
    ...(q.sla === 'breached' ? { slaBreached: true } : {}),
    ...(q.sort ? { sort: q.sort } : {}),
    customFields: q.custom_fields,
    linkParams,
  };
}
