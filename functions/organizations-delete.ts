import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { deleteOrganization, findOrganization } from '#lib/organizations/organizations.ts';
import { presentOrganization } from '#lib/organizations/present.ts';
import type { Organization } from '#lib/organizations/types.ts';

/** DELETE /api/organizations/{organization}: removed for good, its name and domains free; If-Match as PATCH. */
export const handler = httpHandler(
  {
    route: route('deleteOrganization'),
    present: (org: Organization) => ({ statusCode: 200, body: { data: presentOrganization(org) } }),
    pathObject: (caller, { organization }) => findOrganization(caller.accountId, organization ?? ''),
  },
  (request, caller) =>
    deleteOrganization(caller.accountId, request.params.organization ?? '', {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
