import * as v from 'valibot';
import { wire } from './validation/wire-form.ts';
import { attribute } from './validation.ts';

/**
 * Numbers the store keeps exactly (decisions recorded in docs/decisions.md): integers within ±(2^53 − 1), the
 * range where a JSON number is still the number that was sent, and other numbers of magnitude at least
 * 1e-130 (DynamoDB's smallest). Anything else is refused with a 422 on its field, before anything is written.
 */

export const MAX_EXACT_INTEGER = Number.MAX_SAFE_INTEGER;
const MIN_STORABLE_MAGNITUDE = 1e-130;

/** Why a number cannot be stored exactly, or undefined when it can. */
export function unstorableNumber(field: string, n: number): string | undefined {
  const name = attribute(field);
  if (!Number.isFinite(n)) return `The ${name} field must be a finite number.`;
  if (Math.abs(n) > MAX_EXACT_INTEGER) {
    return `The ${name} field must be between -${MAX_EXACT_INTEGER} and ${MAX_EXACT_INTEGER}.`;
  }
  if (n !== 0 && Math.abs(n) < MIN_STORABLE_MAGNITUDE) {
    return `The ${name} field must be 0 or at least 1e-130 in magnitude.`;
  }
  return undefined;
}

/** An integer the store keeps exactly, as the wire form of the integer fields. */
export const exactInteger = v.pipe(
  v.number(),
  v.integer(),
  v.minValue(-MAX_EXACT_INTEGER),
  v.maxValue(MAX_EXACT_INTEGER),
);

/** A number the store keeps exactly (see unstorableNumber). */
export const storableNumber = (field: string) =>
  v.rawCheck<number>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const problem = unstorableNumber(field, dataset.value);
    if (problem) addIssue({ message: problem });
  });

/**
 * Laravel's `numeric`: a JSON number, or a string of a decimal number (sign, digits, point, exponent);
 * hexadecimal, binary, octal, `Infinity` and the like are not numbers.
 */
export const NUMERIC_STRING = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * An optional id: an integer (a JSON number or a string of digits, as Laravel's integer rule accepts); one that
 * names nothing is refused later, by the field's existence rule. On the wire: an id, at least 1.
 */
export const optionalInteger = (field: string) =>
  v.optional(
    v.pipe(
      v.unknown(),
      wire(v.nullable(v.pipe(exactInteger, v.minValue(1)))),
      v.transform((x) => (typeof x === 'string' && x.trim() === '' ? undefined : x)),
      v.optional(
        v.nullable(
          v.pipe(
            v.union(
              [v.number(), v.pipe(v.string(), v.trim(), v.regex(/^-?\d+$/), v.transform(Number))],
              `The ${attribute(field)} field must be an integer.`,
            ),
            v.number(),
            v.integer(`The ${attribute(field)} field must be an integer.`),
            storableNumber(field),
          ),
        ),
      ),
      v.transform((x) => (x === null ? undefined : x)),
    ),
  );
