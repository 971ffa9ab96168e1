import * as v from 'valibot';
import { futureTime, futureTimeWire } from '#lib/validation/time-fields.ts';
import { wire } from '#lib/validation/wire-form.ts';
import { optionalField, requiredSet, requiredText } from '#lib/validation.ts';
import { EVERY_SCOPE, SCOPES } from './scopes.ts';

/** Request bodies of the key routes (decisions.md, "API keys: scopes, expiry, rotation"). */
export const MAX_KEY_NAME_LENGTH = 100;
/** The longest overlap of a rotation: a week. */
export const MAX_ROTATION_OVERLAP_SECONDS = 604_800;

const GRANTS = [...SCOPES, EVERY_SCOPE] as const;

const expiresAt = optionalField(futureTime('expires_at'), futureTimeWire);

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
