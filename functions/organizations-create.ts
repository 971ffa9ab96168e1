import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { createOrganization } from '#lib/organizations/organizations.ts';
import { presentOrganization } from '#lib/organizations/present.ts';
import type { Organization } from '#lib/organizations/types.ts';

/** POST /api/organizations: a new organization, its name and domains its own in the account. */
export const handler = httpHandler(
  {
    route: route('createOrganization'),
    body: true,
    present: (org: Organization) => ({ statusCode: 201, body: { data: presentOrganization(org) } }),
  },
  (request, caller) => createOrganization(caller.accountId, request.body, request.attach),
);
