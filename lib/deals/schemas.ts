import * as v from 'valibot';
import { isCalendarDate } from '#lib/accounts/account-file.ts';
import {
  attribute,
  NUMERIC_STRING,
  optionalInteger,
  optionalText,
  requiredEmail,
  requiredText,
  storableNumber,
} from '#lib/validation.ts';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

const amount = v.optional(
  v.pipe(
    v.unknown(),
    v.transform((x) => (typeof x === 'string' && NUMERIC_STRING.test(x.trim()) ? Number(x) : x)),
    v.transform((x) => (x === null || x === '' ? undefined : x)),
    v.optional(
      v.pipe(
        v.number('The amount field must be a number.'),
        v.finite('The amount field must be a number.'),
        v.minValue(0, 'The amount field must be at least 0.'),
        storableNumber('amount'),
      ),
    ),
  ),
);

const currency = v.optional(
  v.pipe(
    v.unknown(),
    v.transform((x) => (typeof x === 'string' ? x.trim().toUpperCase() : x)),
    v.transform((x) => (x === null || x === '' ? undefined : x)),
    v.optional(
      v.pipe(
        v.string('The currency field must be a string.'),
        v.regex(/^[A-Z]{3}$/, 'The currency field must be a three-letter ISO 4217 code.'),
        v.check((code) => CURRENCIES.has(code), 'The selected currency is invalid.'),
      ),
    ),
  ),
);

const expectedCloseDate = v.optional(
  v.pipe(
    v.unknown(),
    v.transform((x) => (typeof x === 'string' ? x.trim() : x)),
    v.transform((x) => (x === null || x === '' ? undefined : x)),
    v.optional(
      v.pipe(
        v.string(`The ${attribute('expected_close_date')} field must be a string.`),
        v.check(isCalendarDate, 'The expected close date field must be a valid date in the format Y-m-d.'),
      ),
    ),
  ),
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
