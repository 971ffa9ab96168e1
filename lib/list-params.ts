import * as v from 'valibot';
import { MAX_EXACT_INTEGER } from '#lib/number-fields.ts';
import { wire } from '#lib/validation/wire-form.ts';
import { attribute } from '#lib/validation.ts';

/**
 * Query parameters of the paginated lists (tickets, deals, contacts): each arrives as the list of its values
 * (API Gateway's multiValueQueryStringParameters), and every list shares these rules and their 422s
 * (decisions.md, "Ticket list").
 */
export const DEFAULT_PER_PAGE = 15;
export const MAX_PER_PAGE = 100;
/**
 * A query parameter arrives as the list of its values: one value, trimmed, '' as absent (a parameter given
 * twice is a 422), then the field's rules. Its wire form is `rules`, or `wireSchema` when the rules parse a
 * string into something else.
 */
export function param<TSchema extends v.GenericSchema<string, unknown>>(
  field: string,
  rules: TSchema,
  wireSchema: v.GenericSchema = rules,
) {
  return v.optional(
    v.pipe(
      v.array(v.string()),
      wire<string[]>(wireSchema),
      v.check((values) => values.length <= 1, `The ${attribute(field)} field must be a single value.`),
      v.transform((values) => {
        const value = (values[0] ?? '').trim();
        return value === '' ? undefined : value;
      }),
      v.optional(rules),
    ),
  );
}

/** The wire form of wholeNumber(). */
export const wholeNumberWire = (min: number, max = MAX_EXACT_INTEGER) =>
  v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));

/** A whole number from the query, within [min, max] and the exact integers. */
export function wholeNumber(field: string, min: number, max?: number) {
  const name = attribute(field);
  return v.pipe(
    v.string(),
    v.regex(/^\d+$/, `The ${name} field must be an integer.`),
    v.transform(Number),
    v.maxValue(MAX_EXACT_INTEGER, `The ${name} field must not be greater than ${MAX_EXACT_INTEGER}.`),
    max === undefined
      ? v.minValue(min, `The ${name} field must be at least ${min}.`)
      : v.check((n: number) => n >= min && n <= max, `The ${name} field must be between ${min} and ${max}.`),
  );
}

export const picked = <const T extends readonly string[]>(field: string, allowed: T) =>
  v.picklist(allowed, `The selected ${attribute(field)} is invalid.`);

export const maxText = (field: string, max: number) =>
  v.pipe(
    v.string(),
    v.maxLength(max, `The ${attribute(field)} field must not be greater than ${max} characters.`),
  );

/** `page` and `per_page`, as every list takes them. */
export const pageParams = {
  page: param('page', wholeNumber('page', 1), wholeNumberWire(1)),
  per_page: param('per_page', wholeNumber('per_page', 1, MAX_PER_PAGE), wholeNumberWire(1, MAX_PER_PAGE)),
};

/**
 * Whether a query parameter's name is one of a list's: an own entry of its schema (`in` would also find
 * `constructor`, `toString` and the rest of Object.prototype).
 */
export const recognisedBy =
  (schema: { readonly entries: v.ObjectEntries }) =>
  (name: string): boolean =>
    Object.hasOwn(schema.entries, name);

/** The recognised parameters as sent, in order, after `page`: what the pagination links repeat. */
export function linkParamsOf(
  query: Record<string, string[]>,
  recognised: (name: string) => boolean,
): [string, string][] {
  return Object.entries(query)
    .filter(([name]) => name !== 'page' && recognised(name))
    .map(([name, values]): [string, string] => [name, values[0] ?? '']);
}
