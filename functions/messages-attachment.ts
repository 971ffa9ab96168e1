import { route } from '#functions/routes.ts';
import { attachmentOf } from '#lib/email/downloads.ts';
import { downloadAnswer } from '#lib/http/download.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/tickets/{ticket}/messages/{message}/attachments/{attachment}: one attachment's bytes. */
export const handler = httpHandler({ route: route('getMessageAttachment') }, async (request, caller) =>
  downloadAnswer(
    await attachmentOf(
      caller.accountId,
      request.params.ticket ?? '',
      request.params.message ?? '',
      request.params.attachment ?? '',
    ),
  ),
);
