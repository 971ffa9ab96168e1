import * as v from 'valibot';
import { PRIORITIES } from '#lib/accounts/types.ts';
import { MAX_EXACT_INTEGER, optionalInteger, storableNumber, unstorableNumber } from '#lib/number-fields.ts';
import { clearable, clearableText, someField, sometimes } from '#lib/validation/patch-fields.ts';
import { wire } from '#lib/validation/wire-form.ts';
import { attribute, oneOf, optionalText, requiredEmail, requiredText } from '#lib/validation.ts';
import { CHANNELS, type CustomFieldValue, TICKET_STATUSES } from './types.ts';

export const CUSTOM_FIELD_KEY = /^[A-Za-z0-9_]{1,64}$/;
/**
 * Keys that name JavaScript's own object machinery: a JSON parser or a map built from the body would drop or
 * misread them, so they are refused rather than silently lost.
 */
const RESERVED_CUSTOM_FIELD_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
export const MAX_CUSTOM_FIELDS = 50;
/** The longest string value of a custom field: stored, and filtered on (custom_fields[<key>]=<value>). */
export const MAX_CUSTOM_FIELD_STRING = 1024;

/** A custom field's key on the wire (CUSTOM_FIELD_KEY, its length stated for the document's limits). */
export const customFieldKeyWire = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(64),
  v.regex(CUSTOM_FIELD_KEY),
);

/** What custom_fields takes on the wire: the rules below, as a schema. */
const customFieldsWire = v.pipe(
  v.record(
    customFieldKeyWire,
    v.nullable(
      v.union([
        v.pipe(v.string(), v.maxLength(MAX_CUSTOM_FIELD_STRING)),
        v.pipe(v.number(), v.minValue(-MAX_EXACT_INTEGER), v.maxValue(MAX_EXACT_INTEGER)),
        v.boolean(),
      ]),
    ),
  ),
  v.maxEntries(MAX_CUSTOM_FIELDS),
);

/** custom_fields: an object of at most 50 keys `^[A-Za-z0-9_]{1,64}$`, scalar values, strings ≤ 1,024. */
const customFields = v.optional(
  v.pipe(
    v.unknown(),
    wire(v.nullable(customFieldsWire)),
    v.transform((x) => (x === null ? undefined : x)),
    v.optional(
      v.pipe(
        v.custom<Record<string, unknown>>(
          (o) => typeof o === 'object' && o !== null && !Array.isArray(o),
          'The custom fields field must be an object.',
        ),
        v.check(
          (o) => Object.keys(o).length <= MAX_CUSTOM_FIELDS,
          `The custom fields field must not have more than ${MAX_CUSTOM_FIELDS} items.`,
        ),
        v.rawCheck(({ dataset, addIssue }) => {
          if (!dataset.typed) return;
          for (const [key, value] of Object.entries(dataset.value)) {
            const path = [
              { type: 'object', origin: 'value', input: dataset.value, key, value },
            ] as unknown as [v.ObjectPathItem];
            if (!CUSTOM_FIELD_KEY.test(key)) {
              addIssue({
                message: `The custom fields.${key} key must be 1 to 64 letters, digits or underscores.`,
                path,
              });
            } else if (RESERVED_CUSTOM_FIELD_KEYS.has(key)) {
              addIssue({ message: `The custom fields.${key} key is reserved.`, path });
            } else if (!(value === null || ['string', 'number', 'boolean'].includes(typeof value))) {
              addIssue({
                message: `The custom fields.${key} field must be a string, number, boolean or null.`,
                path,
              });
            } else if (typeof value === 'number' && unstorableNumber(`custom_fields.${key}`, value)) {
              addIssue({ message: unstorableNumber(`custom_fields.${key}`, value) as string, path });
            } else if (typeof value === 'string' && value.length > MAX_CUSTOM_FIELD_STRING) {
              addIssue({
                message: `The custom fields.${key} field must not be greater than ${MAX_CUSTOM_FIELD_STRING} characters.`,
                path,
              });
            }
          }
        }),
        // A plain copy of the object's own fields, exactly as sent.
        v.transform((o) => Object.fromEntries(Object.entries(o)) as Record<string, CustomFieldValue>),
      ),
    ),
  ),
);

export const CreateTicketSchema = v.pipe(
  v.object({
    subject: requiredText('subject', 255),
    description: requiredText('description', 65_535),
    requester_email: requiredEmail('requester_email'),
    requester_name: optionalText('requester_name', 255),
    priority: oneOf('priority', PRIORITIES),
    category_id: optionalInteger('category_id'),
    category_slug: optionalText('category_slug', 255),
    channel: oneOf('channel', CHANNELS),
    custom_fields: customFields,
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (
      dataset.typed &&
      dataset.value.category_id !== undefined &&
      dataset.value.category_slug !== undefined
    ) {
      addIssue({
        message: 'The category id field prohibits category slug from being present.',
        path: [
          {
            type: 'object',
            origin: 'value',
            input: dataset.value,
            key: 'category_id',
            value: dataset.value.category_id,
          },
        ],
      });
      addIssue({
        message: 'The category slug field prohibits category id from being present.',
        path: [
          {
            type: 'object',
            origin: 'value',
            input: dataset.value,
            key: 'category_slug',
            value: dataset.value.category_slug,
          },
        ],
      });
    }
  }),
);

export type CreateTicketInput = v.InferOutput<typeof CreateTicketSchema>;

/** An id a PATCH may set or clear: an integer as the create takes it, naming an entity (≥ 1). */
export const nullableId = (field: string) => {
  const notId = `The ${attribute(field)} field must be an integer or null.`;
  return clearable(
    v.pipe(
      v.union(
        [v.number(), v.pipe(v.string(), v.trim(), v.regex(/^-?\d+$/, notId), v.transform(Number))],
        notId,
      ),
      v.number(notId),
      v.integer(`The ${attribute(field)} field must be an integer.`),
      storableNumber(field),
      v.minValue(1, `The selected ${attribute(field)} is invalid.`),
    ),
    notId,
    v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_EXACT_INTEGER)),
  );
};

const MAX_TAGS = 50;
const MAX_TAG_LENGTH = 64;
const tags = v.optional(
  v.pipe(
    v.array(
      v.pipe(
        v.string('Each tag must be a string.'),
        v.trim(),
        v.minLength(1, 'A tag must not be empty.'),
        v.maxLength(MAX_TAG_LENGTH, `A tag must not be greater than ${MAX_TAG_LENGTH} characters.`),
      ),
      'The tags field must be an array of strings.',
    ),
    v.maxLength(MAX_TAGS, `The tags field must not have more than ${MAX_TAGS} items.`),
    v.transform((list) => [...new Set(list)]),
  ),
);

const UpdateTicketFields = v.object({
  status: sometimes(
    v.pipe(v.unknown(), v.picklist(TICKET_STATUSES, 'The selected status is invalid.')),
    v.picklist(TICKET_STATUSES),
  ),
  priority: sometimes(
    v.pipe(v.unknown(), v.picklist(PRIORITIES, 'The selected priority is invalid.')),
    v.picklist(PRIORITIES),
  ),
  assignee_id: nullableId('assignee_id'),
  team_id: nullableId('team_id'),
  organization_id: nullableId('organization_id'),
  category_id: nullableId('category_id'),
  category_slug: clearableText('category_slug', 255),
  subject: sometimes(requiredText('subject', 255)),
  description: sometimes(requiredText('description', 65_535)),
  custom_fields: sometimes(customFields, customFieldsWire),
  tags,
});

/** The `updateTicket` route (decisions.md, "One ticket: read and update"). */
export const UpdateTicketSchema = v.pipe(
  UpdateTicketFields,
  someField(UpdateTicketFields),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const value = dataset.value;
    if (value.category_id !== undefined && value.category_slug !== undefined) {
      addIssue({
        message: 'The category id field prohibits category slug from being present.',
        path: [
          { type: 'object', origin: 'value', input: value, key: 'category_id', value: value.category_id },
        ],
      });
    }
  }),
);

export type UpdateTicketInput = v.InferOutput<typeof UpdateTicketSchema>;
