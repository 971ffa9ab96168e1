import * as v from 'valibot';
import { isCalendarDate } from '#lib/time.ts';
import {
  attribute,
  MAX_EXACT_INTEGER,
  NUMERIC_STRING,
  optionalField,
  optionalInteger,
  optionalText,
  requiredEmail,
  requiredText,
  storableNumber,
} from '#lib/validation.ts';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/** Laravel's `numeric`: a JSON number or a decimal string (NUMERIC_STRING), at least 0, kept exactly. */
const amount = optionalField(
  v.pipe(
    v.unknown(),
    v.transform((x) => (typeof x === 'string' && NUMERIC_STRING.test(x) ? Number(x) : x)),
    v.number('The amount field must be a number.'),
    v.finite('The amount field must be a number.'),
    v.minValue(0, 'The amount field must be at least 0.'),
    storableNumber('amount'),
  ),
  v.union([
    v.pipe(v.number(), v.minValue(0), v.maxValue(MAX_EXACT_INTEGER)),
    v.pipe(v.string(), v.regex(NUMERIC_STRING), v.description('A decimal number, at least 0.')),
  ]),
);

const currency = optionalField(
  v.pipe(
    v.string('The currency field must be a string.'),
    v.toUpperCase(),
    v.regex(/^[A-Z]{3}$/, 'The currency field must be a three-letter ISO 4217 code.'),
    v.check((code) => CURRENCIES.has(code), 'The selected currency is invalid.'),
  ),
  v.pipe(v.string(), v.length(3), v.regex(/^[A-Za-z]{3}$/), v.description('An ISO 4217 code, in any case.')),
);

const expectedCloseDate = optionalField(
  v.pipe(
    v.string(`The ${attribute('expected_close_date')} field must be a string.`),
    v.check(isCalendarDate, 'The expected close date field must be a valid date in the format Y-m-d.'),
  ),
  v.pipe(v.string(), v.length(10), v.isoDate()),
);

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
