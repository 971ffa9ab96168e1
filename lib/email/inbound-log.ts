import * as v from 'valibot';
import { type InboundRecord, queryInbound } from '#lib/data/mail/inbound.ts';
import { param, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { parseInput } from '#lib/validation.ts';
import { INBOUND_ID_PATTERN } from './outcomes.ts';

/**
 * `GET /api/email/inbound` (decisions.md, "The e-mail channel"): every mail the account received, newest first,
 * with its outcome, a cursor page at a time (one range of the log's partition, whatever its length).
 */
export const DEFAULT_INBOUND_LIMIT = 50;
export const MAX_INBOUND_LIMIT = 100;

export const InboundListQueryParams = v.object({
  after: param(
    'after',
    v.pipe(v.string(), v.regex(INBOUND_ID_PATTERN, 'The after field must be the id of a received mail.')),
    v.pipe(v.string(), v.maxLength(30), v.regex(INBOUND_ID_PATTERN)),
  ),
  limit: param('limit', wholeNumber('limit', 1, MAX_INBOUND_LIMIT), wholeNumberWire(1, MAX_INBOUND_LIMIT)),
});

export function presentInbound(r: InboundRecord) {
  return {
    id: r.id,
    received_at: r.receivedAt,
    header_message_id: r.headerMessageId,
    from: r.from,
    subject: r.subject,
    outcome: r.outcome,
    reason: r.reason,
    ticket_uuid: r.ticketUuid,
    message_id: r.messageId,
  };
}

export async function listInbound(accountId: string, query: Record<string, string[]>) {
  const q = parseInput(InboundListQueryParams, query);
  const limit = q.limit ?? DEFAULT_INBOUND_LIMIT;
  const found = await queryInbound(accountId, q.after, limit + 1);
  const page = found.slice(0, limit);
  return {
    data: page.map(presentInbound),
    next_cursor: found.length > limit ? (page.at(-1)?.id ?? null) : null,
  };
}
