import { route } from '#functions/routes.ts';
import type { ErasureRecord } from '#lib/data/erasures.ts';
import { presentErasure, startErasure } from '#lib/erasures/erasures.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** POST /api/erasures: starts the erasure of a person (202); the erasure runner does it in the background. */
export const handler = httpHandler(
  {
    route: route('createErasure'),
    body: true,
    present: (erasure: ErasureRecord) => ({ statusCode: 202, body: { data: presentErasure(erasure) } }),
  },
  (request, caller) => startErasure(caller.accountId, request.body, request.attach),
);
