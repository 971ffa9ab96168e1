import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { SECRET_ANSWER_HEADERS } from '#lib/http/response.ts';
import { getWebhookEndpoint, rotateWebhookSecret } from '#lib/webhooks/endpoints.ts';
import { presentRotatedSecret, type RotatedSecret } from '#lib/webhooks/present.ts';

/** POST /api/webhooks/{webhook}/rotate-secret: a new secret; the previous one keeps signing for 24 hours. */
export const handler = httpHandler(
  {
    route: route('rotateWebhookSecret'),
    present: rotated,
    pathObject: (caller, { webhook }) => getWebhookEndpoint(caller.accountId, webhook ?? ''),
  },
  (request, caller) => rotateWebhookSecret(caller.accountId, request.params.webhook ?? '', request.attach),
);

function rotated(result: RotatedSecret): HttpResult {
  return { statusCode: 200, body: { data: presentRotatedSecret(result) }, headers: SECRET_ANSWER_HEADERS };
}
