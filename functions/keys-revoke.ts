import { route } from '#functions/routes.ts';
import { findKey, type PresentedKey, revokeKey } from '#lib/accounts/key-management.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';

/** DELETE /api/keys/{key}: revokes a key of the account; it stops working within the authorizer cache time. */
export const handler = httpHandler(
  {
    route: route('revokeApiKey'),
    present: revoked,
    pathObject: (caller, { key }) => findKey(caller.accountId, key ?? ''),
  },
  (request, caller) => revokeKey(caller.accountId, request.params.key ?? '', request.attach),
);

function revoked(key: PresentedKey): HttpResult {
  return { statusCode: 200, body: { data: key } };
}
