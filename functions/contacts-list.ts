import { route } from '#functions/routes.ts';
import { listContacts } from '#lib/contacts/contacts.ts';
import { parseContactListQuery } from '#lib/contacts/schemas.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/contacts: filtered by e-mail, searched, paginated, newest first. */
export const handler = httpHandler({ route: route('listContacts') }, async (request, caller) => ({
  statusCode: 200,
  body: await listContacts(caller.accountId, parseContactListQuery(request.query), {
    baseUrl: request.baseUrl,
    path: request.resourcePath,
  }),
}));
