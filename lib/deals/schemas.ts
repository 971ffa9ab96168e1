import * as v from 'valibot';
import { fractionDigits } from '#lib/decimal.ts';
import { NUMERIC_STRING, optionalInteger } from '#lib/number-fields.ts';
import { isCalendarDate } from '#lib/time.ts';
import { clearable, clearableText, someField, sometimes } from '#lib/validation/patch-fields.ts';
import { attribute, optionalField, optionalText, requiredEmail, requiredText } from '#lib/validation.ts';
import { DEAL_STATUSES } from './types.ts';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/**
 * Amounts are exact decimals with at most 4 digits after the point, from 0 to MAX_AMOUNT: 15 significant
 * digits at most, so the JSON number sent is exactly the decimal kept, and board sums are exact
 * (lib/decimal.ts). Laravel's `numeric`: a JSON number or a decimal string (NUMERIC_STRING).
 */
export const MAX_AMOUNT = 99_999_999_999.9999;
export const AMOUNT_DECIMALS = 4;
/** The longest amount sent as a decimal string (room for signs, zeros and an exponent around MAX_AMOUNT's 16). */
export const MAX_AMOUNT_STRING_LENGTH = 32;
const amountRules = v.pipe(
  v.unknown(),
  // Checked before the string is read as a number: a failed check ends the pipe here.
  v.check(
    (x) => typeof x !== 'string' || x.length <= MAX_AMOUNT_STRING_LENGTH,
    `The amount field must not be greater than ${MAX_AMOUNT_STRING_LENGTH} characters.`,
  ),
  v.transform((x) => (typeof x === 'string' && NUMERIC_STRING.test(x) ? Number(x) : x)),
  v.number('The amount field must be a number.'),
  // A JSON number too large for a double (1e400) arrives as ±Infinity: the range rules name it.
  v.minValue(0, 'The amount field must be at least 0.'),
  v.maxValue(MAX_AMOUNT, `The amount field must not be greater than ${MAX_AMOUNT}.`),
  // Every rule of a pipe runs, even after one failed: this one must not see a number the range refused.
  v.check(
    (n) => !Number.isFinite(n) || fractionDigits(n) <= AMOUNT_DECIMALS,
    `The amount field must have at most ${AMOUNT_DECIMALS} decimal places.`,
  ),
);
const amountWire = v.union([
  v.pipe(v.number(), v.minValue(0), v.maxValue(MAX_AMOUNT)),
  v.pipe(
    v.string(),
    v.maxLength(MAX_AMOUNT_STRING_LENGTH),
    v.regex(NUMERIC_STRING),
    v.description('A decimal number, at least 0.'),
  ),
]);
const amount = optionalField(amountRules, amountWire);

const currencyRules = v.pipe(
  v.string('The currency field must be a string.'),
  v.trim(),
  v.toUpperCase(),
  v.regex(/^[A-Z]{3}$/, 'The currency field must be a three-letter ISO 4217 code.'),
  v.check((code) => CURRENCIES.has(code), 'The selected currency is invalid.'),
);
const currencyWire = v.pipe(
  v.string(),
  v.length(3),
  v.regex(/^[A-Za-z]{3}$/),
  v.description('An ISO 4217 code, in any case.'),
);
const currency = optionalField(currencyRules, currencyWire);

const dateRules = v.pipe(
  v.string(`The ${attribute('expected_close_date')} field must be a string.`),
  v.trim(),
  v.check(isCalendarDate, 'The expected close date field must be a valid date in the format Y-m-d.'),
);
const dateWire = v.pipe(v.string(), v.length(10), v.isoDate());
const expectedCloseDate = optionalField(dateRules, dateWire);

export const CreateDealSchema = v.object({
  name: requiredText('name', 255),
  amount,
  currency,
  pipeline_id: optionalInteger('pipeline_id'),
  stage_id: optionalInteger('stage_id'),
  expected_close_date: expectedCloseDate,
  contact_email: requiredEmail('contact_email'),
  contact_first_name: optionalText('contact_first_name', 255),
  contact_last_name: optionalText('contact_last_name', 255),
  contact_phone: optionalText('contact_phone', 64),
});

export type CreateDealInput = v.InferOutput<typeof CreateDealSchema>;

export const MAX_LOST_REASON = 255;

/** The `updateDeal` route (decisions.md, "Deals that move"): the create's rules for each field sent. */
const UpdateDealFields = v.object({
  name: sometimes(requiredText('name', 255)),
  amount: sometimes(amountRules, amountWire),
  currency: sometimes(currencyRules, currencyWire),
  expected_close_date: clearable(
    dateRules,
    'The expected close date field must be a date in the format Y-m-d, or null.',
    dateWire,
  ),
  pipeline_id: optionalInteger('pipeline_id'),
  stage_id: optionalInteger('stage_id'),
  status: sometimes(
    v.pipe(v.unknown(), v.picklist(DEAL_STATUSES, 'The selected status is invalid.')),
    v.picklist(DEAL_STATUSES),
  ),
  lost_reason: clearableText('lost_reason', MAX_LOST_REASON),
});

export const UpdateDealSchema = v.pipe(UpdateDealFields, someField(UpdateDealFields));

export type UpdateDealInput = v.InferOutput<typeof UpdateDealSchema>;
