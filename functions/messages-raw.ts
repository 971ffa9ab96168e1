import { route } from '#functions/routes.ts';
import { rawMailOf } from '#lib/email/downloads.ts';
import { downloadAnswer } from '#lib/http/download.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/tickets/{ticket}/messages/{message}/raw: the mail a message came from, as received (message/rfc822). */
export const handler = httpHandler({ route: route('getMessageRaw') }, async (request, caller) =>
  downloadAnswer(
    await rawMailOf(caller.accountId, request.params.ticket ?? '', request.params.message ?? ''),
  ),
);
