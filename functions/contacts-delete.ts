import { route } from '#functions/routes.ts';
import { findContact } from '#lib/contacts/contacts.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { type Deleted, deleteObject } from '#lib/trash/delete.ts';
import { presentDeleted } from '#lib/trash/present.ts';

/** DELETE /api/contacts/{contact}: to the trash, out of every list, count and sum at once; If-Match as PATCH. */
export const handler = httpHandler(
  {
    route: route('deleteContact'),
    present: (deleted: Deleted) => presentDeleted(deleted),
    pathObject: (caller, { contact }) => findContact(caller.accountId, contact ?? ''),
  },
  (request, caller) =>
    deleteObject(caller.accountId, 'contact', request.params.contact ?? '', {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
