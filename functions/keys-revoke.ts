import { route } from '#functions/routes.ts';
import { revokeKey } from '#lib/accounts/key-management.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** DELETE /api/keys/{key}: revokes a key of the account; it stops working within the authorizer cache time. */
export const handler = httpHandler({ route: route('revokeApiKey') }, async (request, caller) => ({
  statusCode: 200,
  body: { data: await revokeKey(caller.accountId, request.params.key ?? '') },
}));
