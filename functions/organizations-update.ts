import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { findOrganization, updateOrganization } from '#lib/organizations/organizations.ts';
import { presentOrganization } from '#lib/organizations/present.ts';
import type { Organization } from '#lib/organizations/types.ts';
import { etagOf, type Versioned } from '#lib/versioned-update.ts';

/** PATCH /api/organizations/{organization}: name, domains, external_id; If-Match refuses a lost update. */
export const handler = httpHandler(
  {
    route: route('updateOrganization'),
    body: true,
    present: ({ entity, version }: Versioned<Organization>) => ({
      statusCode: 200,
      body: { data: presentOrganization(entity) },
      headers: { ETag: etagOf(version) },
    }),
    pathObject: (caller, { organization }) => findOrganization(caller.accountId, organization ?? ''),
  },
  (request, caller) =>
    updateOrganization(caller.accountId, request.params.organization ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
