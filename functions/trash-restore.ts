import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { requireTypeScope } from '#lib/http/scope.ts';
import { presentRestored } from '#lib/trash/present.ts';
import { findTrashed, type Restored, restoreObject } from '#lib/trash/restore.ts';

/** POST /api/trash/{uuid}/restore: the object back as it was, counts and sums included. */
export const handler = httpHandler(
  {
    route: route('restoreTrash'),
    present: (restored: Restored) => presentRestored(restored),
    pathObject: (caller, { uuid }) => findTrashed(caller.accountId, uuid ?? ''),
  },
  (request, caller) =>
    restoreObject(caller.accountId, request.params.uuid ?? '', {
      needScope: (type) => requireTypeScope(caller.scopes, type, 'write'),
      attach: request.attach,
    }),
);
