import * as v from 'valibot';
import { PRIORITIES } from '#lib/accounts/types.ts';
import { readAddress } from '#lib/email/addresses.ts';
import { MAX_MESSAGE_BODY } from '#lib/tickets/messages/message.ts';
import { TICKET_STATUSES } from '#lib/tickets/types.ts';
import { formatTimestamp, parseInstant } from '#lib/time.ts';
import { customFieldKey } from '../records.ts';

/**
 * The lines of deskpipe's import format (docs/import-format.md), one schema a type, in the API's own names and
 * vocabularies. Limits are the API's own (a subject of 255, 50 tags of 64, 50 custom fields, a body of 65,536), so
 * what a line gives is what the API would take: a longer subject or a 1,000-tag list is an error row naming its
 * field, never a silent cut. Keys the format does not name are ignored (a converter may carry its own).
 */

const MAX_ID = 255;
const MAX_TIME = 35;

const text = (max: number) => v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(max));
/** Absent, null and blank are all null. */
const nullableText = (max: number) =>
  v.optional(
    v.pipe(
      v.nullable(v.pipe(v.string(), v.trim(), v.maxLength(max))),
      v.transform((s) => (s ? s : null)),
    ),
    null,
  );

/** A source id: a string of 1 to 255 characters (a number is refused: `"42"`, not `42`). */
export const sourceId = text(MAX_ID);
/** A reference to another line's id; absent and null are the same. */
const reference = v.optional(v.nullable(sourceId), null);

const email = v.pipe(
  v.string(),
  v.rawTransform<string, string>(({ dataset, addIssue, NEVER }) => {
    const read = readAddress(dataset.value);
    if ('address' in read) return read.address;
    addIssue({ message: `not an e-mail address (${read.problem})` });
    return NEVER;
  }),
);

/** An ISO 8601 time with an offset, out as the API's timestamp; before 1970 is refused (no real helpdesk's). */
const time = v.pipe(
  v.string(),
  v.maxLength(MAX_TIME),
  v.rawTransform<string, string>(({ dataset, addIssue, NEVER }) => {
    const us = parseInstant(dataset.value);
    if (us === undefined) {
      addIssue({ message: 'not an ISO 8601 time with an offset, such as 2024-03-01T09:30:00Z' });
      return NEVER;
    }
    if (us < 0) {
      addIssue({ message: 'before 1970-01-01' });
      return NEVER;
    }
    return formatTimestamp(us);
  }),
);
const optionalTime = v.optional(v.nullable(time), null);

export const AgentLine = v.object({
  type: v.literal('agent'),
  id: sourceId,
  email,
  name: text(255),
  active: v.optional(v.boolean(), true),
  team_ids: v.optional(v.pipe(v.array(sourceId), v.maxLength(1000)), []),
});

export const TeamLine = v.object({ type: v.literal('team'), id: sourceId, name: text(255) });

export const OrganizationLine = v.object({
  type: v.literal('organization'),
  id: sourceId,
  name: text(255),
  domains: v.optional(v.pipe(v.array(v.pipe(text(253), v.toLowerCase())), v.maxLength(100)), []),
});

export const ContactLine = v.object({
  type: v.literal('contact'),
  id: sourceId,
  email,
  name: nullableText(255),
  phone: nullableText(64),
  organization_id: reference,
});

/**
 * An attachment: its bytes in `content` (base64, checked when mapped: ndjson-attachments.ts), or a `url`, kept to be
 * reported (an error row: never fetched). One of the two, exactly.
 */
const AttachmentLine = v.pipe(
  v.object({
    id: sourceId,
    file_name: text(255),
    content_type: v.optional(text(255), 'application/octet-stream'),
    size: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(0))), null),
    url: v.nullish(
      v.pipe(
        v.string(),
        v.maxLength(2048),
        v.url(),
        v.check((u) => /^https?:\/\//i.test(u), 'not an http or https URL'),
      ),
    ),
    content: v.nullish(v.string()),
  }),
  v.check((a) => (a.url == null) !== (a.content == null), 'give one of content and url'),
);

const MessageLine = v.pipe(
  v.object({
    id: sourceId,
    author: v.optional(v.nullable(v.object({ type: v.picklist(['agent', 'contact']), id: sourceId })), null),
    body: v.pipe(v.string(), v.trim(), v.maxLength(MAX_MESSAGE_BODY)),
    internal: v.optional(v.boolean(), false),
    created_at: time,
    message_id: v.pipe(
      nullableText(998),
      v.transform((id) => (id ? id.replace(/^<(.*)>$/, '$1') : null)),
    ),
    attachments: v.optional(v.pipe(v.array(AttachmentLine), v.maxLength(100)), []),
  }),
  v.forward(
    v.check((m) => m.body !== '' || m.attachments.length > 0, 'empty, and the message has no attachment'),
    ['body'],
  ),
);

const TAG = v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(64));

/** Keys JavaScript's objects keep for themselves: a map would drop them silently, so they are refused. */
const RESERVED_KEYS = ['__proto__', 'constructor', 'prototype'];

const customFields = v.optional(
  v.pipe(
    v.unknown(),
    v.rawCheck(({ dataset, addIssue }) => {
      const value = dataset.value;
      if (typeof value !== 'object' || value === null) return;
      const reserved = Object.keys(value).find((key) => RESERVED_KEYS.includes(customFieldKey(key)));
      if (reserved !== undefined) addIssue({ message: `${reserved}: a reserved key` });
    }),
    v.optional(
      v.nullable(
        v.record(
          v.string(),
          v.nullable(
            v.union([v.pipe(v.string(), v.maxLength(1024)), v.pipe(v.number(), v.finite()), v.boolean()]),
          ),
        ),
      ),
    ),
    v.transform((fields) =>
      Object.entries(fields ?? {}).map(([key, value]) => [customFieldKey(key), value] as const),
    ),
    v.maxLength(50),
    v.check((entries) => entries.every(([key]) => key !== ''), 'a key with no letter or digit'),
    v.transform((entries) => Object.fromEntries(entries)),
  ),
  {},
);

export const TicketLine = v.object({
  type: v.literal('ticket'),
  id: sourceId,
  subject: text(255),
  status: v.picklist(TICKET_STATUSES),
  priority: v.optional(v.nullable(v.picklist(PRIORITIES)), null),
  created_at: time,
  updated_at: optionalTime,
  resolved_at: optionalTime,
  closed_at: optionalTime,
  tags: v.optional(
    v.pipe(
      v.array(TAG),
      v.maxLength(50),
      v.transform((list) => [...new Set(list)]),
    ),
    [],
  ),
  requester: v.pipe(
    v.object({ id: reference, email: v.optional(v.nullable(email), null) }),
    v.check((r) => r.id !== null || r.email !== null, 'neither an id nor an email'),
  ),
  assignee_id: reference,
  team_id: reference,
  organization_id: reference,
  custom_fields: customFields,
  messages: v.pipe(v.array(MessageLine), v.minLength(1, 'no message: the first is the description')),
});

export type TicketLineOutput = v.InferOutput<typeof TicketLine>;
