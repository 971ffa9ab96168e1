import { route } from '#functions/routes.ts';
import { rotateKey, withoutSecret } from '#lib/accounts/key-management.ts';
import { RotateKeySchema } from '#lib/accounts/key-schemas.ts';
import { decodeGrants } from '#lib/accounts/scopes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { SECRET_ANSWER_HEADERS } from '#lib/http/response.ts';
import { parseInput } from '#lib/validation.ts';

/** POST /api/keys/{key}/rotate: a new key like the old one, which keeps working for the overlap asked. */
export const handler = httpHandler(
  { route: route('rotateApiKey'), body: true, keep: withoutSecret },
  async (request, caller) => {
    const { expire_old_in_seconds: overlap } = parseInput(RotateKeySchema, request.body);
    const key = await rotateKey(
      decodeGrants(caller.scopes),
      caller.accountId,
      request.params.key ?? '',
      overlap,
    );
    return { statusCode: 201, body: { data: key }, headers: SECRET_ANSWER_HEADERS };
  },
);
