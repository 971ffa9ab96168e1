import { route } from '#functions/routes.ts';
import { createKeyAs, type KeptKey } from '#lib/accounts/key-making.ts';
import { CreateKeySchema } from '#lib/accounts/key-schemas.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { SECRET_ANSWER_HEADERS } from '#lib/http/response.ts';
import { parseInput } from '#lib/validation.ts';

/** POST /api/keys: a key with scopes the calling key holds; the answer is the only one that shows it. */
export const handler = httpHandler(
  { route: route('createApiKey'), body: true, present: created },
  (request, caller) => {
    const input = parseInput(CreateKeySchema, request.body);
    const key = { name: input.name, scopes: input.scopes, expiresAt: input.expires_at };
    return createKeyAs(caller, key, request.attach);
  },
);

/** Also what an Idempotency-Key keeps, with `api_key` null (lib/accounts/key-making.ts). */
function created(key: KeptKey): HttpResult {
  return { statusCode: 201, body: { data: key }, headers: SECRET_ANSWER_HEADERS };
}
