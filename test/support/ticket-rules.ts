/** A rule one field breaks: a label, the fields sent, the field the 422 names, and its message (Laravel's). */
export type FieldRule = [label: string, fields: Record<string, unknown>, field: string, message: string];

/**
 * The rules POST /api/tickets and PATCH /api/tickets/{ticket} answer alike, with one 422 naming the field and the
 * same message: written once, checked by both routes' tests.
 */
export const sharedTicketRules: FieldRule[] = [
  ['blank subject', { subject: '   ' }, 'subject', 'The subject field is required.'],
  [
    'long subject',
    { subject: 'x'.repeat(256) },
    'subject',
    'The subject field must not be greater than 255 characters.',
  ],
  ['bad priority', { priority: 'asap' }, 'priority', 'The selected priority is invalid.'],
  [
    'custom fields not an object',
    { custom_fields: [1, 2] },
    'custom_fields',
    'The custom fields field must be an object.',
  ],
  [
    'nested custom field',
    { custom_fields: { a: { b: 1 } } },
    'custom_fields.a',
    'The custom fields.a field must be a string, number, boolean or null.',
  ],
  [
    'bad custom field key',
    { custom_fields: { 'bad key': 1 } },
    'custom_fields.bad key',
    'The custom fields.bad key key must be 1 to 64 letters, digits or underscores.',
  ],
  [
    'long custom field value',
    { custom_fields: { a: 'x'.repeat(1025) } },
    'custom_fields.a',
    'The custom fields.a field must not be greater than 1024 characters.',
  ],
  [
    'too many custom fields',
    { custom_fields: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
    'custom_fields',
    'The custom fields field must not have more than 50 items.',
  ],
];
