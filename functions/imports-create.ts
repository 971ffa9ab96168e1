import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { presentStarted, type StartedImport, startImport } from '#lib/imports/jobs.ts';
import { environmentSealer } from '#lib/imports/sealers.ts';

/**
 * POST /api/imports: starts an import (202), the account's one active import; the runner reads it in. Its source
 * credentials are sealed by the environment's Sealer (deployed: a KMS data key; docs/imports.md, "Credentials").
 */
export const handler = httpHandler(
  {
    route: route('createImport'),
    body: true,
    present: (started: StartedImport) => ({ statusCode: 202, body: { data: presentStarted(started) } }),
  },
  (request, caller) =>
    startImport(caller.accountId, request.body, request.baseUrl, request.attach, environmentSealer()),
);
