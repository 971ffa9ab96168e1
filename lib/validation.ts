import * as v from 'valibot';
import { MAX_ADDRESS_LENGTH, readAddress } from './email/addresses.ts';
import { type FieldErrors, ValidationFailed } from './errors.ts';
import { wire } from './validation/wire-form.ts';

/**
 * Request validation with Laravel's messages and the request's own field names (decisions.md). Schemas are
 * built from these helpers, which carry the message of each rule; parseInput turns valibot's issues into
 * the 422 body. Strings are trimmed and an empty string counts as absent, as in Laravel.
 */

/** "requester_email" → "requester email", as Laravel names attributes in messages. */
export const attribute = (field: string) => field.replaceAll('_', ' ');

const blankToUndefined = (value: unknown) =>
  typeof value === 'string' && value.trim() === ''
    ? undefined
    : typeof value === 'string'
      ? value.trim()
      : value;

const required = (field: string) => `The ${attribute(field)} field is required.`;
const mustBeString = (field: string) => `The ${attribute(field)} field must be a string.`;
const tooLong = (field: string, max: number) =>
  `The ${attribute(field)} field must not be greater than ${max} characters.`;

const present = (field: string) => v.check((x: unknown) => x !== undefined && x !== null, required(field));
const nullToUndefined = <T>(x: T | null | undefined): T | undefined => (x === null ? undefined : x);

export function stringRules(field: string, max: number) {
  return v.pipe(v.string(mustBeString(field)), v.maxLength(max, tooLong(field, max)));
}

/**
 * A required field. A missing key is given the value null (valibot's object schema would otherwise report
 * the key itself), so that the field's own "is required" message is the one reported.
 */
export function requiredField<TSchema extends v.GenericSchema>(
  field: string,
  rules: TSchema,
  wireSchema: v.GenericSchema = rules,
) {
  return v.optional(
    v.pipe(v.unknown(), wire(wireSchema, true), v.transform(blankToUndefined), present(field), rules),
    null,
  );
}

/**
 * An optional field: trimmed; missing, null and '' all come out as undefined, anything else meets `rules`.
 * `wireSchema`: what a client sends, when `rules` takes more (a number as a string, say).
 */
export function optionalField<TSchema extends v.GenericSchema>(
  rules: TSchema,
  wireSchema: v.GenericSchema = rules,
) {
  return v.optional(
    v.pipe(
      v.unknown(),
      wire(v.nullable(wireSchema)),
      v.transform(blankToUndefined),
      v.optional(v.nullable(rules)),
      v.transform(nullToUndefined),
    ),
  );
}

/** A required string field: trimmed, and '' counts as missing. */
export function requiredText(field: string, max: number) {
  return requiredField(field, stringRules(field, max));
}

/** An optional string field: trimmed; '' and null come out as undefined. */
export function optionalText(field: string, max: number) {
  return optionalField(stringRules(field, max));
}

/**
 * An e-mail address as lib/email/addresses.ts reads it (the one reader of mail, the API and the erasure):
 * apostrophes, quoted local parts and internationalized domains accepted; out comes the address as held (the
 * domain in lower-case ASCII, the local part as written). At most 254 characters, never cut.
 */
export function emailAddress(invalid: string, tooLongMessage: string) {
  return v.rawTransform<string, string>(({ dataset, addIssue, NEVER }) => {
    const read = readAddress(dataset.value);
    if ('address' in read) return read.address;
    addIssue({ message: read.problem === 'too_long' ? tooLongMessage : invalid });
    return NEVER;
  });
}

function emailRules(field: string) {
  return v.pipe(
    stringRules(field, MAX_ADDRESS_LENGTH),
    emailAddress(
      `The ${attribute(field)} field must be a valid email address.`,
      tooLong(field, MAX_ADDRESS_LENGTH),
    ),
  );
}

/** What a client sends for an address: a string of at most 254 characters (the reader says the rest). */
const emailWire = v.pipe(
  v.string(),
  v.maxLength(MAX_ADDRESS_LENGTH),
  v.metadata({ format: 'idn-email' }),
  v.description(
    'An e-mail address (RFC 5322/6531: apostrophes, quoted local parts and internationalized domains accepted); ' +
      'an internationalized domain is kept in its ASCII form.',
  ),
);

/** A required e-mail address, at most 254 characters. */
export function requiredEmail(field: string) {
  return requiredField(field, emailRules(field), emailWire);
}

function urlRules(field: string, max: number) {
  return v.pipe(stringRules(field, max), v.url(`The ${attribute(field)} field must be a valid URL.`));
}

/** A required URL (what `new URL()` parses), at most `max` characters. */
export function requiredUrl(field: string, max: number) {
  return requiredField(field, urlRules(field, max));
}

/**
 * A required list of distinct values: an array of at least one item, each meeting `item` (its issues under
 * `field.<index>`); an item given twice is kept once, where it first appears.
 */
export function requiredSet<TItem extends v.GenericSchema>(
  field: string,
  item: TItem,
  limits: { max: number; wireItem: v.GenericSchema },
) {
  const name = attribute(field);
  return requiredField(
    field,
    v.pipe(
      v.array(v.unknown(), `The ${name} field must be an array.`),
      v.minLength(1, required(field)),
      v.maxLength(limits.max, `The ${name} field must not have more than ${limits.max} items.`),
      v.array(item),
      v.transform((list) => [...new Set(list)]),
    ),
    v.pipe(v.array(limits.wireItem), v.minLength(1), v.maxLength(limits.max)),
  );
}

/** One of a fixed list of values ("The selected priority is invalid."). */
export function oneOf<const T extends readonly string[]>(field: string, values: T) {
  return optionalField(v.picklist(values, `The selected ${attribute(field)} is invalid.`));
}

/** Runs a schema; on failure throws ValidationFailed with every field's messages under the request's names. */
export function parseInput<TSchema extends v.GenericSchema>(
  schema: TSchema,
  input: unknown,
): v.InferOutput<TSchema> {
  return validate(schema, input, { paths: 'dot' });
}

/**
 * How an issue names its field: `dot` as the API's 422 bodies do (`custom_fields.plan`, `tags.1`), `index` as the
 * admin CLI does (`agents[0].email`); the input itself is `_` or `(file)`.
 */
export type PathStyle = 'dot' | 'index';

export function fieldPath(issue: v.BaseIssue<unknown>, style: PathStyle): string {
  let path = '';
  for (const step of issue.path ?? []) {
    const key = (step as { key: unknown }).key;
    if (style === 'index' && typeof key === 'number') path += `[${key}]`;
    else path += path ? `.${String(key)}` : String(key);
  }
  return path || (style === 'dot' ? '_' : '(file)');
}

/**
 * The one way input is validated: runs the schema, and on failure throws ValidationFailed (or the error `fail`
 * makes of the same field errors) with every field's messages under its path.
 */
export function validate<TSchema extends v.GenericSchema>(
  schema: TSchema,
  input: unknown,
  options: {
    paths: PathStyle;
    message?: (issue: v.BaseIssue<unknown>) => string;
    fail?: (errors: FieldErrors) => Error;
  },
): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  // By path in a Map: a path is a name the input chose (an account file's `constructor` key), and on a plain
  // object `errors[path]` would find Object.prototype's member.
  const byPath = new Map<string, string[]>();
  for (const issue of result.issues) {
    const path = fieldPath(issue, options.paths);
    const message = options.message?.(issue) ?? issue.message;
    const messages = byPath.get(path) ?? [];
    if (!messages.includes(message)) byPath.set(path, [...messages, message]);
  }
  const errors: FieldErrors = Object.fromEntries(byPath);
  throw options.fail?.(errors) ?? new ValidationFailed(errors);
}
