import * as v from 'valibot';
import { ISO_TIME_WITH_OFFSET, nowMicros, parseInstant } from '#lib/time.ts';
import { wire } from '#lib/validation/wire-form.ts';
import { optionalField, requiredSet, requiredText } from '#lib/validation.ts';
import { EVERY_SCOPE, SCOPES } from './scopes.ts';

/** Request bodies of the key routes (decisions.md, "API keys: scopes, expiry, rotation"). */
export const MAX_KEY_NAME_LENGTH = 100;
/** The longest overlap of a rotation: a week. */
export const MAX_ROTATION_OVERLAP_SECONDS = 604_800;

const GRANTS = [...SCOPES, EVERY_SCOPE] as const;

/** The longest ISO 8601 time taken (lib/time.ts, ISO_TIME_WITH_OFFSET). */
const MAX_TIME_LENGTH = 35;

const expiresAt = optionalField(
  v.pipe(
    v.string('The expires at field must be a string.'),
    v.maxLength(
      MAX_TIME_LENGTH,
      `The expires at field must not be greater than ${MAX_TIME_LENGTH} characters.`,
    ),
    // A time that names no real instant (2027-02-30, 24:00) is refused, never rolled over.
    v.check(
      (s) => parseInstant(s) !== undefined,
      'The expires at field must be an ISO 8601 time with an offset, such as 2027-01-31T00:00:00.000000Z.',
    ),
    // Epoch microseconds: kept as sent, `.123456` too (the API's times have six digits).
    v.transform((s) => parseInstant(s) as number),
    v.check((us) => us > nowMicros(), 'The expires at field must be a time in the future.'),
  ),
  v.pipe(v.string(), v.maxLength(MAX_TIME_LENGTH), v.regex(ISO_TIME_WITH_OFFSET)),
);

/** The `createApiKey` route. */
export const CreateKeySchema = v.object({
  name: requiredText('name', MAX_KEY_NAME_LENGTH),
  scopes: requiredSet('scopes', v.picklist(GRANTS, `Each scope must be one of ${GRANTS.join(', ')}.`), {
    max: GRANTS.length,
    wireItem: v.picklist(GRANTS),
  }),
  expires_at: expiresAt,
});
export type CreateKeyInput = v.InferOutput<typeof CreateKeySchema>;

/** The `rotateApiKey` route. */
export const RotateKeySchema = v.object({
  expire_old_in_seconds: v.optional(
    v.pipe(
      v.unknown(),
      wire(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(MAX_ROTATION_OVERLAP_SECONDS)), true),
      v.check((x) => x !== undefined && x !== null, 'The expire old in seconds field is required.'),
      v.number('The expire old in seconds field must be an integer.'),
      v.integer('The expire old in seconds field must be an integer.'),
      v.minValue(0, 'The expire old in seconds field must be at least 0.'),
      v.maxValue(
        MAX_ROTATION_OVERLAP_SECONDS,
        `The expire old in seconds field must not be greater than ${MAX_ROTATION_OVERLAP_SECONDS}.`,
      ),
    ),
    null,
  ),
});
export type RotateKeyInput = v.InferOutput<typeof RotateKeySchema>;
