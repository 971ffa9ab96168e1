import { route } from '#functions/routes.ts';
import { type ContactView, findContact, updateContact } from '#lib/contacts/contacts.ts';
import { presentContact } from '#lib/contacts/present.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { etagOf } from '#lib/versioned-update.ts';

/** PATCH /api/contacts/{contact}: renames a contact or moves it to a free e-mail; If-Match refuses a lost update. */
export const handler = httpHandler(
  {
    route: route('updateContact'),
    body: true,
    present: updated,
    pathObject: (caller, { contact }) => findContact(caller.accountId, contact ?? ''),
  },
  (request, caller) =>
    updateContact(caller.accountId, request.params.contact ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);

function updated({ entity, version, openDeals }: ContactView): HttpResult {
  return {
    statusCode: 200,
    body: { message: 'Contact updated successfully.', data: presentContact(entity, openDeals) },
    headers: { ETag: etagOf(version) },
  };
}
