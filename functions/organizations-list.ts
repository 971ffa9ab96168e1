import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { listOrganizations } from '#lib/organizations/organizations.ts';
import { parseOrganizationListQuery } from '#lib/organizations/schemas.ts';

/** GET /api/organizations: the account's organizations by id after a cursor, or the one holding `domain`. */
export const handler = httpHandler({ route: route('listOrganizations') }, async (request, caller) => ({
  statusCode: 200,
  body: await listOrganizations(caller.accountId, parseOrganizationListQuery(request.query)),
}));
