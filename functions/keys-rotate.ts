import { route } from '#functions/routes.ts';
import { type KeptKey, rotateKey } from '#lib/accounts/key-making.ts';
import { findKey } from '#lib/accounts/key-management.ts';
import { RotateKeySchema } from '#lib/accounts/key-schemas.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { SECRET_ANSWER_HEADERS } from '#lib/http/response.ts';
import { parseInput } from '#lib/validation.ts';

/** POST /api/keys/{key}/rotate: a new key like the old one, which keeps working for the overlap asked. */
export const handler = httpHandler(
  {
    route: route('rotateApiKey'),
    body: true,
    present: created,
    pathObject: (caller, { key }) => findKey(caller.accountId, key ?? '', true),
  },
  (request, caller) => {
    const { expire_old_in_seconds: overlap } = parseInput(RotateKeySchema, request.body);
    return rotateKey(caller, request.params.key ?? '', overlap, request.attach);
  },
);

/** Also what an Idempotency-Key keeps, with `api_key` null (lib/accounts/key-making.ts). */
function created(key: KeptKey): HttpResult {
  return { statusCode: 201, body: { data: key }, headers: SECRET_ANSWER_HEADERS };
}
