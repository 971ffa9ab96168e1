import { route } from '#functions/routes.ts';
import { getContact } from '#lib/contacts/contacts.ts';
import { presentContact } from '#lib/contacts/present.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { etagOf } from '#lib/versioned-update.ts';

/** GET /api/contacts/{contact}: one contact by uuid, with its open deals and its ETag. */
export const handler = httpHandler({ route: route('getContact') }, async (request, caller) => {
  const { entity, version, openDeals } = await getContact(caller.accountId, request.params.contact ?? '');
  return {
    statusCode: 200,
    body: { data: presentContact(entity, openDeals) },
    headers: { ETag: etagOf(version) },
  };
});
