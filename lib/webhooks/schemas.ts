import * as v from 'valibot';
import { EVENT_ID_PATTERN } from '#lib/data/events.ts';
import { EVENT_TYPE_PATTERNS } from '#lib/events/types.ts';
import { pageParams } from '#lib/list-params.ts';
import { parseInstant } from '#lib/time.ts';
import { clearableText, someField, sometimes } from '#lib/validation/patch-fields.ts';
import { optionalField, optionalText, requiredSet, requiredUrl } from '#lib/validation.ts';
import { MAX_URL_LENGTH } from './url-policy.ts';

/** Request bodies and queries of the webhook routes (decisions.md, "Webhooks"), with Laravel's messages. */
export const MAX_DESCRIPTION_LENGTH = 255;

/** Event types, `<resource>.*` or `*`, as the `listEvents` route takes them; a type given twice is kept once. */
const events = requiredSet(
  'events',
  v.picklist(EVENT_TYPE_PATTERNS, `Each event type must be one of ${EVENT_TYPE_PATTERNS.join(', ')}.`),
  { max: EVENT_TYPE_PATTERNS.length, wireItem: v.picklist(EVENT_TYPE_PATTERNS) },
);

const url = requiredUrl('url', MAX_URL_LENGTH);

/** The `createWebhook` route. */
export const CreateEndpointSchema = v.object({
  url,
  events,
  description: optionalText('description', MAX_DESCRIPTION_LENGTH),
});

/** The `updateWebhook` route: the fields sent, at least one. */
const UpdateEndpointFields = v.object({
  url: sometimes(url),
  events: sometimes(events),
  description: clearableText('description', MAX_DESCRIPTION_LENGTH),
  enabled: sometimes(v.boolean('The enabled field must be true or false.'), v.boolean()),
});
export const UpdateEndpointSchema = v.pipe(UpdateEndpointFields, someField(UpdateEndpointFields));

export type CreateEndpointInput = v.InferOutput<typeof CreateEndpointSchema>;
export type UpdateEndpointInput = v.InferOutput<typeof UpdateEndpointSchema>;

/** A timestamp as the API writes them (decisions.md): UTC, up to six fractional digits. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;
/** A real instant, never rolled over (2026-02-30 is refused, not taken as March 2). */
const isTimestamp = (value: string) => TIMESTAMP.test(value) && parseInstant(value) !== undefined;

const RedeliverFields = v.object({
  event_id: optionalField(
    v.pipe(
      v.string('The event id field must be a string.'),
      v.regex(EVENT_ID_PATTERN, 'The event id field must be the id of an event.'),
    ),
    v.pipe(v.string(), v.maxLength(24), v.regex(EVENT_ID_PATTERN)),
  ),
  since: optionalField(
    v.pipe(
      v.string('The since field must be a string.'),
      v.check(isTimestamp, 'The since field must be a UTC timestamp such as 2026-11-22T14:13:37.123456Z.'),
    ),
    v.pipe(v.string(), v.maxLength(27), v.isoTimestamp()),
  ),
});

/** The `redeliverWebhook` route: `event_id` or `since`, exactly one. */
export const RedeliverSchema = v.pipe(
  RedeliverFields,
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { event_id, since } = dataset.value as { event_id?: string; since?: string };
    const at = (key: string): [v.ObjectPathItem] => [
      { type: 'object', origin: 'value', input: dataset.value, key, value: undefined },
    ];
    if (event_id === undefined && since === undefined) {
      addIssue({
        message: 'The event id field is required when since is not present.',
        path: at('event_id'),
      });
    } else if (event_id !== undefined && since !== undefined) {
      addIssue({ message: 'The event id field prohibits since from being present.', path: at('event_id') });
    }
  }),
);
export type RedeliverInput = v.InferOutput<typeof RedeliverSchema>;

/** The `listWebhookDeliveries` route's query: pagination as tickets. */
export const DeliveryListQueryParams = v.object({ ...pageParams });
