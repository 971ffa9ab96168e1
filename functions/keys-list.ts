import { route } from '#functions/routes.ts';
import { listKeys } from '#lib/accounts/key-management.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/keys: the account's keys, oldest first, never a secret. */
export const handler = httpHandler({ route: route('listApiKeys') }, async (_request, caller) => ({
  statusCode: 200,
  body: { data: await listKeys(caller.accountId) },
}));
