import * as v from 'valibot';
import { attribute } from '../validation.ts';
import { wire, wireOf } from './wire-form.ts';

/**
 * PATCH bodies (decisions.md): fields that may be left out, or cleared, and at least one of them sent. A field
 * sent meets the create's rules (lib/validation.ts).
 */

/**
 * A PATCH must change something: a body with none of its fields is a 422 on `body`, naming the fields (its
 * message is built from the schema's own keys, so it cannot drift from them).
 */
export function someField<TEntries extends v.ObjectEntries>(schema: v.ObjectSchema<TEntries, undefined>) {
  const names = Object.keys(schema.entries);
  const list = `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
  return v.rawCheck<v.InferOutput<typeof schema>>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const value = dataset.value as Record<string, unknown>;
    if (Object.values(value).every((x) => x === undefined)) {
      addIssue({
        message: `The request must change at least one field: ${list}.`,
        path: [{ type: 'object', origin: 'value', input: value, key: 'body', value }],
      });
    }
  });
}

/**
 * A field a PATCH may leave out; when sent, the create's rules apply (a blank subject is "required"). Its wire
 * form is the create's, or `wireSchema`.
 */
export const sometimes = <TSchema extends v.GenericSchema>(schema: TSchema, wireSchema?: v.GenericSchema) =>
  v.optional(
    v.pipe(
      v.unknown(),
      wire(wireSchema ?? (wireOf(schema)?.schema as v.GenericSchema)),
      v.check((x) => x !== undefined),
      schema,
    ),
  );

/** A blank string counts as null (decisions.md: empty means absent; in a PATCH, absent-by-value is null). */
const blankToNull = v.transform((x: unknown) => (typeof x === 'string' && x.trim() === '' ? null : x));

/** A field a PATCH may set or clear: null (or blank) clears it, anything else must pass `rules` (`wireSchema` sent). */
export const clearable = <TSchema extends v.GenericSchema>(
  rules: TSchema,
  message: string,
  wireSchema: v.GenericSchema,
) =>
  v.optional(
    v.pipe(v.unknown(), wire(v.nullable(wireSchema)), blankToNull, v.union([v.null(), rules], message)),
  );

/** A text a PATCH may set (trimmed, at most `max` characters) or clear (null or blank), with Laravel's messages. */
export const clearableText = (field: string, max: number) =>
  clearable(
    v.pipe(
      v.string(`The ${attribute(field)} field must be a string.`),
      v.trim(),
      v.maxLength(max, `The ${attribute(field)} field must not be greater than ${max} characters.`),
    ),
    `The ${attribute(field)} field must be a string or null.`,
    v.pipe(v.string(), v.maxLength(max)),
  );
