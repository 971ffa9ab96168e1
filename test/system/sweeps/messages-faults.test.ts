import { describe, expect, it } from 'vitest';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { messageKeys, ticketKeys } from '#lib/data/keys.ts';
import { getItem, queryAll, tableName } from '#lib/data/store/client.ts';
import {
  type ConversationState,
  conversationAfter,
  conversationAtCreate,
} from '#lib/tickets/conversation.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { type FeedEvent, readFeedToEnd } from '#test/support/feed.ts';
import { type Gateway, useGateway } from '#test/support/http.ts';
import { checkFilter, fetchAll, type Mismatch } from '#test/support/list-model.ts';
import { cancelConflictingTransactions } from '#test/support/transaction-conflicts.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * A message write under faults and under contention (decisions.md, "Conversations"): every store call failed
 * in turn, and 50 messages at once on one ticket. After each, a recount: the messages stored, the ticket's
 * fields, every list and count the ticket is in, and the feed agree with one another and with the conversation
 * reducer replayed over the conversation's order.
 */
const gateway = useGateway();
/**
 * The recounts' reads (the feed to its end, every ticket's GET, the status lists: ~30 requests a round) through a
 * gateway of their own whose authorizer answers are cached, as API Gateway caches them: a read is one authorizer
 * run fewer, nothing else. The writes, whose calls the faults count and fail, go through `gateway`, which
 * authorizes every request.
 */
const reader = useGateway(300);
const MODES: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];

interface StoredMessage {
  id: string;
  number: number;
  author: { type: 'agent' | 'requester' };
  visibility: 'public' | 'internal';
  createdAt: string;
}

async function storedMessages(accountId: string, uuid: string): Promise<StoredMessage[]> {
  // The ticket's message partition read whole (a Query: a Scan of the table every test file shares grows with it).
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': messageKeys.partition(accountId, uuid) },
    ConsistentRead: true,
  });
  return (items as unknown as StoredMessage[]).sort((a, b) => a.number - b.number);
}

/** The clock fields the reducer gives over the stored conversation, in its order. */
function replayed(createdAt: string, messages: StoredMessage[]): ConversationState {
  return messages.reduce<ConversationState>(
    (state, m) =>
      conversationAfter(state, { author: m.author.type, visibility: m.visibility, createdAt: m.createdAt }),
    conversationAtCreate(createdAt),
  );
}

/**
 * The recount of one ticket: messages numbered 2.. without a gap, each once; the ticket's stored conversation
 * fields equal the reducer's replay; each message has exactly one message.created in the feed, in conversation
 * order, and the ticket one ticket.updated per message (plus its other changes); the status lists and counts
 * of the account agree with GET of every ticket.
 */
async function recount(
  g: Gateway,
  account: { apiKey: string; accountId: string },
  uuid: string,
  uuids: string[],
  otherUpdates: number,
) {
  const messages = await storedMessages(account.accountId, uuid);
  expect(messages.map((m) => m.number)).toEqual(messages.map((_, i) => i + 2));
  expect(new Set(messages.map((m) => m.id)).size).toBe(messages.length);
  const times = messages.map((m) => m.createdAt);
  expect([...times].sort()).toEqual(times);
  const ticketItem = (await getItem(
    ticketKeys.item(account.accountId, orderKeyOfUuid(uuid) as string),
  )) as Record<string, unknown>;
  const expected = replayed(ticketItem.createdAt as string, messages);
  expect({
    lastMessageAt: ticketItem.lastMessageAt,
    waitingSince: ticketItem.waitingSince,
    firstReplyAt: ticketItem.firstReplyAt,
    replyCycle: ticketItem.replyCycle,
  }).toEqual(expected);
  expect(ticketItem.messageCount).toBe(messages.length + 1);

  // The feed shows an event once every place before it is settled (a few seconds at most: docs/data-model.md).
  const createdOf = (events: FeedEvent[]) =>
    events.filter((e) => e.type === 'message.created' && e.data.object.ticket_uuid === uuid);
  const feed = await waitFor(
    async () => {
      const read = await readFeedToEnd(g.call, account.apiKey);
      return createdOf(read.events).length >= messages.length ? read : undefined;
    },
    { timeout: 30_000, interval: 500, label: 'the feed to show every message' },
  );
  const created = createdOf(feed.events);
  expect(created.map((e) => e.data.object.id)).toEqual(messages.map((m) => m.id));
  const updates = feed.events.filter((e) => e.type === 'ticket.updated' && e.data.object.uuid === uuid);
  expect(updates.length).toBe(messages.length + otherUpdates);
  // Each object's events in commit order: the ticket's versions climb by one.
  expect(updates.map((e) => e.data.version)).toEqual(updates.map((_, i) => i + 2));

  const model = await fetchAll(g, account.apiKey, uuids);
  const mismatches: Mismatch[] = [];
  for (const status of ['open', 'pending', 'in_progress', 'resolved'] as const) {
    for (const f of [{ status }, { status, priority: 'high' as const }]) {
      mismatches.push(...(await checkFilter(g, account.apiKey, model, f, 100)));
    }
  }
  expect(mismatches).toEqual([]);
  return messages;
}

describe('a message write survives a failure of any of its store calls', () => {
  it('first answer 201, 409 or 503; the keyed retry lands the message once; everything agrees with a recount', async () => {
    const account = await createTestAccount({ agents: agentsFile(2) });
    const key = account.apiKey;
    const agent = (account.agents[0] as { id: number }).id;
    const uuids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await gateway.call('POST', '/api/tickets', {
        key,
        body: { subject: `Fault ${i}`, description: 'd', requester_email: 'r@f.test', priority: 'high' },
      });
      expect(r.status).toBe(201);
      uuids.push(r.body.ticket.uuid);
    }
    const target = uuids[1] as string;
    let round = 0;
    const bodyFor = (r: number) =>
      r % 3 === 2
        ? { body: `requester ${r}`, author: 'requester' }
        : {
            body: `agent ${r}`,
            agent_id: agent,
            status: (['pending', 'in_progress', 'resolved'] as const)[r % 3],
          };
    const dry = await withFault(undefined, () =>
      gateway.call('POST', `/api/tickets/${target}/messages`, {
        key,
        body: bodyFor(round),
        headers: { 'Idempotency-Key': `dry-${round}` },
      }),
    );
    expect(dry.result.status, dry.result.text).toBe(201);
    round++;
    const n = dry.operations.length;
    expect(dry.operations).toContain('TransactWriteItems');
    const seen: string[] = [];
    for (const mode of MODES) {
      for (let at = 1; at <= n; at++) {
        const label = `${mode} at ${at}`;
        const headers = { 'Idempotency-Key': `k-${round}` };
        const first = await withFault({ at, mode }, () =>
          gateway.call('POST', `/api/tickets/${target}/messages`, { key, body: bodyFor(round), headers }),
        );
        seen.push(`${label} (${first.operations[at - 1]}): ${first.result.status}`);
        // 409: a conflict on the key's claim reads as the key still running (decisions.md, "Safe retries").
        expect([201, 409, 503], `${label} ${first.result.text}`).toContain(first.result.status);
        const retry = await waitFor(
          async () => {
            const answer = await gateway.call('POST', `/api/tickets/${target}/messages`, {
              key,
              body: bodyFor(round),
              headers,
            });
            return answer.status === 409 ? undefined : answer;
          },
          { timeout: 15_000, interval: 300, label: `${label}: the key's claim to end` },
        );
        expect(retry.status, `${label} retry ${retry.text}`).toBe(201);
        if (first.result.status === 201) expect(retry.text).toBe(first.result.text);
        const messages = await recount(reader, account, target, uuids, 0);
        expect(messages.length, label).toBe(round + 1);
        expect(messages.at(-1)?.id, label).toBe(retry.body.data.id);
        round++;
      }
    }
    expect(seen.length).toBe(MODES.length * n);
  }, 400_000);
});

describe('50 concurrent messages on one ticket', () => {
  it('each stored once; conversation and feed agree on the order; the clocks equal the reducer over it', async () => {
    const account = await createTestAccount({ agents: agentsFile(3) });
    const key = account.apiKey;
    const agents = (account.agents as { id: number }[]).map((a) => a.id);
    const created = await gateway.call('POST', '/api/tickets', {
      key,
      body: { subject: 'Busy', description: 'd', requester_email: 'r@busy.test', priority: 'high' },
    });
    const uuid = created.body.ticket.uuid as string;
    const conflicts = cancelConflictingTransactions();
    const bodies = Array.from({ length: 50 }, (_, i) =>
      i % 4 === 0
        ? { body: `requester ${i}`, author: 'requester' }
        : i % 4 === 3
          ? { body: `note ${i}`, agent_id: agents[i % 3], visibility: 'internal' }
          : { body: `reply ${i}`, agent_id: agents[i % 3], ...(i % 8 === 1 ? { status: 'pending' } : {}) },
    );
    const statuses: number[] = [];
    try {
      await Promise.all(
        bodies.map(async (body, i) => {
          const headers = { 'Idempotency-Key': `c-${i}` };
          const answer = await waitFor(
            async () => {
              const r = await gateway.call('POST', `/api/tickets/${uuid}/messages`, { key, body, headers });
              statuses.push(r.status);
              return r.status === 201 ? r : undefined;
            },
            { timeout: 120_000, interval: 200, label: `message ${i}` },
          );
          expect(answer.body.data.body).toBe(body.body);
        }),
      );
    } finally {
      conflicts.uninstall();
    }
    expect(
      statuses.every((s) => [201, 409, 503].includes(s)),
      String(statuses),
    ).toBe(true);
    const messages = await recount(reader, account, uuid, [uuid], 0);
    expect(messages.length).toBe(50);
    const conversation: { id: string; body: string }[] = [];
    let after = '';
    for (;;) {
      const r = await gateway.call('GET', `/api/tickets/${uuid}/messages?limit=17${after}`, { key });
      conversation.push(...r.body.data);
      if (!r.body.next_cursor) break;
      after = `&after=${r.body.next_cursor}`;
    }
    expect(conversation.slice(1).map((m) => m.id)).toEqual(messages.map((m) => m.id));
    expect(new Set(conversation.slice(1).map((m) => m.body))).toEqual(new Set(bodies.map((b) => b.body)));
  }, 300_000);
});
