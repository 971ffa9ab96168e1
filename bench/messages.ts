import { randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { messageKeys, orderKeys, ticketKeys } from '#lib/data/keys.ts';
import { batchPutAll, dynamo, tableName } from '#lib/data/store/client.ts';
import {
  type ConversationState,
  conversationAfter,
  conversationAtCreate,
} from '#lib/tickets/conversation.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import type { Message } from '#lib/tickets/messages/message.ts';
import { postMessage } from '#lib/tickets/messages/post.ts';
import { listMessages } from '#lib/tickets/messages/read.ts';
import { formatTimestamp, nowMicros, parseTimestamp } from '#lib/time.ts';
import { atTime } from '#test/support/clock.ts';
import { figuresOf, type RequestFigures } from '#test/support/dynamo-figures.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { median, round } from './lib/stats.ts';

/**
 * `npm run bench -- --messages [--quick]`: a message's create and a conversation page on tickets of 10, 1,000 and
 * 10,000 messages (--quick: 10 and 1,000). Conversations are seeded straight through the data layer (message
 * items batch-written in the ticket's partition, the ticket's count and clock fields set as the reducer gives
 * them over the seeded order), since posting 10,000 messages one by one measures nothing new and takes minutes;
 * then real posts and pages are measured: round trips, items read and written, write units, median ms. Bodies
 * of 200 characters; one post with a 65,536-character body shows the write units a large message costs. To
 * bench/runs/results-messages.json.
 */
const SAMPLES = 15;

export async function runMessagesOnly(options: { quick: boolean; endpoint: string }) {
  return runPart({
    file: 'results-messages.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async () => {
      const account = await benchAccount('bench-messages', {
        agents: [{ email: 'agent@messages.bench', name: 'Agent' }],
      });
      const agentId = (account.agents[0] as { id: number }).id;
      const body = (i: number) => ({ body: `Reply ${i}: ${'x'.repeat(190)}`, agent_id: agentId });
      const sizes = options.quick ? [10, 1_000] : [10, 1_000, 10_000];
      const rows = [];
      for (const size of sizes) {
        const ticket = await createTicket(account.accountId, {
          subject: `Conversation of ${size}`,
          description: 'The first message.',
          requester_email: 'r@messages.bench',
        });
        await seedConversation(account.accountId, ticket.uuid, ticket.createdAt, ticket.number, size);
        const post = await sample(async (i) => {
          await postMessage(account.accountId, ticket.uuid, body(i));
        });
        const firstPage = await sample(async () => {
          await listMessages(account.accountId, ticket.uuid, { limit: ['50'] });
        });
        const middle = seededId(Math.max(2, Math.floor(size / 2)));
        const middlePage = await sample(async () => {
          await listMessages(account.accountId, ticket.uuid, { limit: ['50'], after: [middle] });
        });
        const row = {
          messages: size,
          create: post,
          pageFromStart: firstPage,
          pageFromMiddle: middlePage,
        };
        log(`  messages ${JSON.stringify(row)}`);
        rows.push(row);
      }
      const bigTicket = await createTicket(account.accountId, {
        subject: 'Large body',
        description: 'd',
        requester_email: 'r@messages.bench',
      });
      const largeBody = await sample(async () => {
        await postMessage(account.accountId, bigTicket.uuid, {
          body: '中'.repeat(65_536),
          agent_id: agentId,
        });
      }, 3);
      log(`  65,536-character body (3-byte characters): ${JSON.stringify(largeBody)}`);
      // A reply that also sets `pending` on an open, assigned ticket (the requester's message before each, not
      // measured, reopens it): the message plus the index moves a PATCH of the status makes.
      const assigned = await createTicket(account.accountId, {
        subject: 'Status by message',
        description: 'd',
        requester_email: 'r@messages.bench',
      });
      const { updateTicket } = await import('#lib/tickets/update-ticket.ts');
      await updateTicket(account.accountId, assigned.uuid, { assignee_id: agentId });
      const withStatus = await sample(
        async (i) => {
          await postMessage(account.accountId, assigned.uuid, { ...body(i), status: 'pending' });
        },
        SAMPLES,
        () => postMessage(account.accountId, assigned.uuid, { body: 'Back again', author: 'requester' }),
      );
      log(`  a reply that sets pending on an assigned ticket: ${JSON.stringify(withStatus)}`);
      const { inTime, lostBreach } = await nextReplyCycles();
      log(
        `  a requester's message starting a next-reply cycle, the last one answered in time: ${JSON.stringify(inTime)}`,
      );
      log(
        `  the same, the last one answered late and its breach not yet written: ${JSON.stringify(lostBreach)}`,
      );
      return { messages: rows, largeBody, withStatus, nextCycle: { inTime, lostBreach } };
    },
  });
}

/**
 * A requester's message that starts a next-reply cycle (docs/sla.md, "No breach is lost between two passes"): on
 * a ticket whose last cycle was answered in time (nothing owed), and on one whose last cycle was answered late
 * while the runner, stalled, had not written its breach: that message writes the breach and its
 * `ticket.sla_breached` in its own commit. Each sample's ticket is made before it (not measured), its earlier
 * messages at past times.
 */
async function nextReplyCycles() {
  const account = await benchAccount('bench-messages-sla', {
    agents: [{ email: 'agent@messages-sla.bench', name: 'Agent' }],
    sla_policies: [{ name: 'Standard', first_reply_minutes: 60, next_reply_minutes: 1 }],
  });
  const agentId = (account.agents[0] as { id: number }).id;
  const MIN_US = 60_000_000;
  const at = <T>(us: number, fn: () => Promise<T>): Promise<T> => atTime(us / 1000, fn);
  let uuid = '';
  /** A ticket 10 minutes old: a first reply, a requester's message (cycle due 1 minute later), a reply after `replyMinutes`. */
  const ticketAnswered = (replyMinutes: number) => async () => {
    const start = nowMicros() - 10 * MIN_US;
    const ticket = await at(start, () =>
      createTicket(account.accountId, {
        subject: 'Cycles',
        description: 'd',
        requester_email: 'r@messages.bench',
      }),
    );
    await at(start + MIN_US / 2, () =>
      postMessage(account.accountId, ticket.uuid, { body: 'On it.', agent_id: agentId }),
    );
    await at(start + MIN_US, () =>
      postMessage(account.accountId, ticket.uuid, { body: 'Any news?', author: 'requester' }),
    );
    await at(start + MIN_US + replyMinutes * MIN_US, () =>
      postMessage(account.accountId, ticket.uuid, { body: 'Here.', agent_id: agentId }),
    );
    uuid = ticket.uuid;
  };
  const nextCycle = async (i: number) => {
    await postMessage(account.accountId, uuid, {
      body: `Still broken ${i}: ${'x'.repeat(180)}`,
      author: 'requester',
    });
  };
  return {
    inTime: await sample(nextCycle, SAMPLES, ticketAnswered(0.5)),
    lostBreach: await sample(nextCycle, SAMPLES, ticketAnswered(3)),
  };
}

/** Runs `fn` SAMPLES times: the median of each figure and of the time. */
async function sample(fn: (i: number) => Promise<void>, samples = SAMPLES, before?: () => Promise<unknown>) {
  const figures: RequestFigures[] = [];
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    await before?.();
    const started = performance.now();
    figures.push(await figuresOf(() => fn(i)));
    ms.push(performance.now() - started);
  }
  const med = (pick: (f: RequestFigures) => number) => median(figures.map(pick));
  return {
    roundTrips: med((f) => f.roundTrips),
    itemsRead: med((f) => f.itemsRead),
    itemsWritten: med((f) => f.itemsWritten),
    writeUnits: round(
      med((f) => f.writeUnits),
      1,
    ),
    readCapacity: round(
      med((f) => (f.itemsWritten === 0 ? f.capacity : 0)),
      1,
    ),
    medianMs: round(median(ms), 1),
  };
}

const seededId = (number: number) => `msg_${String(number).padStart(10, '0')}${'0'.repeat(16)}`;

/**
 * Messages 2..size+1 of the ticket written straight to its partition (agent and requester in turn), and the
 * ticket's message count and clock fields set to what the reducer gives over them.
 */
async function seedConversation(
  accountId: string,
  uuid: string,
  createdAt: string,
  number: number,
  size: number,
) {
  const startUs = parseTimestamp(createdAt);
  let state: ConversationState = conversationAtCreate(createdAt);
  const items: Record<string, unknown>[] = [];
  for (let n = 2; n <= size + 1; n++) {
    const requester = n % 2 === 1;
    const message: Message = {
      id: seededId(n),
      number: n,
      ticketUuid: uuid,
      author: requester
        ? { type: 'requester', agentId: null, name: null, email: 'r@messages.bench' }
        : { type: 'agent', agentId: 1, name: 'Agent', email: 'agent@messages.bench' },
      visibility: 'public',
      channel: 'api',
      body: `Seeded ${n}: ${randomBytes(95).toString('hex')}`,
      createdAt: formatTimestamp(startUs + n),
    };
    state = conversationAfter(state, {
      author: message.author.type,
      visibility: 'public',
      createdAt: message.createdAt,
    });
    items.push({ ...messageKeys.message(accountId, uuid, n), type: 'message', ...message });
  }
  await batchPutAll(items);
  await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: ticketKeys.item(accountId, orderKeys.of(startUs, number)),
      UpdateExpression:
        'SET messageCount = :c, lastMessageAt = :l, waitingSince = :w, firstReplyAt = :f, replyCycle = :r',
      ExpressionAttributeValues: {
        ':c': size + 1,
        ':l': state.lastMessageAt,
        ':w': state.waitingSince,
        ':f': state.firstReplyAt,
        ':r': state.replyCycle,
      },
    }),
  );
}
