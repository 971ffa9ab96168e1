import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { showOrganization } from '#lib/organizations/organizations.ts';
import { presentOrganization } from '#lib/organizations/present.ts';
import { etagOf } from '#lib/versioned-update.ts';

/** GET /api/organizations/{organization}: one organization by id, with its ETag. */
export const handler = httpHandler({ route: route('getOrganization') }, async (request, caller) => {
  const { entity, version } = await showOrganization(caller.accountId, request.params.organization ?? '');
  return { statusCode: 200, body: { data: presentOrganization(entity) }, headers: { ETag: etagOf(version) } };
});
