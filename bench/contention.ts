import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, ticketEvent } from '#test/support/events.ts';
import { shapeOf } from '#test/support/item-sizes.ts';
import { cancelConflictingTransactions } from '#test/support/transaction-conflicts.ts';
import { benchAccount } from './lib/account.ts';
import { answerCauses } from './lib/answer-causes.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { percentile, round } from './lib/stats.ts';

/**
 * One account's goodput under DynamoDB's transaction conflicts (issue 27): `writers` concurrent loops, each
 * sending a ticket create or a PATCH (1 create for 2 updates, as the capacity model's burst: 100 creates/s + 200
 * updates/s), round-robin assignment on, for `seconds`, with the store behind cancelConflictingTransactions
 * (test/support/transaction-conflicts.ts), which cancels a transaction as DynamoDB does when another one in
 * flight holds one of its items. DynamoDB Local alone would queue them instead and report no conflict.
 */
export interface ContentionResult {
  /** Whether the store cancelled conflicting transactions as DynamoDB does. */
  conflictsAsDynamoDb: boolean;
  writers: number;
  seconds: number;
  agents: number;
  /** Changes answered 2xx, a second. */
  landedPerSecond: number;
  creates: number;
  updates: number;
  /** Answers 503 (the service gave up after its conflict retries or its deadline). */
  unavailable: number;
  /** Why each 503 came (bench/lib/answer-causes.ts): the last store failure, commits cancelled, seconds taken. */
  unavailableCauses: { cause: string; answers: number }[];
  /** Any other answer that is not 2xx (none expected). */
  otherFailures: number;
  /** How long an answer took, ms: what a 503 at the request's 8.5 s deadline is the tail of. */
  answerMs: { p50: number; p99: number; max: number };
  /** TransactWriteItems calls sent, cancelled by a conflict, and single writes refused by one. */
  transactions: number;
  conflicts: number;
  writesRefused: number;
  /**
   * Store calls of the changes sent (landed or not) per change landed, the wasted work of conflicts included: all
   * of them (a cancelled transaction is a round trip on DynamoDB), and those that reached the store (the wrapper
   * cancels before it).
   */
  callsPerChange: number;
  storeCallsPerChange: number;
  /** Conflicts per change landed: how many extra transactions a landed change cost. */
  conflictsPerChange: number;
  /** The kinds of item the conflicts were on (test/support/item-sizes.ts, shapeOf), most first: where they are. */
  contested: { shape: string; conflicts: number }[];
}

const STATUSES = ['open', 'pending', 'in_progress'] as const;
const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;

export async function measureContention(options: {
  writers: number;
  seconds: number;
  agents: number;
  slug: string;
  /** false: DynamoDB Local as it is (transactions on one item wait for each other), for comparison. */
  conflicts?: boolean;
  /** The account's first ticket number (a large account's, whose tickets are numbered past its first 12,800). */
  numberedFrom?: number;
}): Promise<ContentionResult> {
  const agents = Array.from({ length: options.agents }, (_, i) => ({
    email: `agent${i}@contention.test`,
    name: `Agent ${i}`,
  }));
  const account = await benchAccount(options.slug, {
    agents,
    auto_assignment: { enabled: true, method: 'round_robin' },
    sla_policies: [{ name: 'All', resolution_minutes: 480 }],
  });
  const caller = callerOf(account);
  if (options.numberedFrom) await reserveIds(account.accountId, { ticket: options.numberedFrom - 1 });
  const body = (n: number) => ({
    subject: `Contention ticket ${n}`,
    description: 'A ticket written while others are written',
    requester_email: `requester${n % 50}@client.test`,
    priority: PRIORITIES[n % PRIORITIES.length],
  });
  const create = (n: number) =>
    createTicket(proxyEvent({ method: 'POST', path: '/api/tickets', caller, body: body(n) }), lambdaContext);
  // A pool of tickets to update, created before the wrapper is installed.
  const pool: string[] = [];
  for (let i = 0; i < Math.max(50, options.writers * 2); i++) {
    pool.push(JSON.parse((await create(i)).body).ticket.uuid);
  }
  const update = (n: number) =>
    updateTicket(
      ticketEvent('PATCH', pool[n % pool.length] ?? '', caller, {
        status: STATUSES[n % STATUSES.length],
        priority: PRIORITIES[(n * 7) % PRIORITIES.length],
        assignee_id: account.agents[n % account.agents.length]?.id,
      }),
      lambdaContext,
    );

  const counts = { creates: 0, updates: 0, unavailable: 0, otherFailures: 0 };
  const asDynamoDb = options.conflicts ?? true;
  const wrapper = asDynamoDb
    ? cancelConflictingTransactions()
    : {
        counts: { transactions: 0, cancelled: 0, writesRefused: 0, contested: new Map() },
        uninstall: () => {},
      };
  const causes = answerCauses(account.accountId);
  const answerMs: number[] = [];
  let sent = 0;
  const started = performance.now();
  const end = started + options.seconds * 1000;
  try {
    await Promise.all(
      Array.from({ length: options.writers }, async () => {
        while (performance.now() < end) {
          const n = sent++;
          const isCreate = n % 3 === 0;
          const sentAt = performance.now();
          const answer = await causes.traced(() => (isCreate ? create(n) : update(n)));
          answerMs.push(performance.now() - sentAt);
          if (answer.statusCode < 300) counts[isCreate ? 'creates' : 'updates']++;
          else if (answer.statusCode === 503) counts.unavailable++;
          else counts.otherFailures++;
        }
      }),
    );
  } finally {
    wrapper.uninstall();
    causes.uninstall();
  }
  const elapsed = (performance.now() - started) / 1000;
  const landed = counts.creates + counts.updates;
  return {
    conflictsAsDynamoDb: asDynamoDb,
    writers: options.writers,
    seconds: round(elapsed),
    agents: options.agents,
    landedPerSecond: round(landed / elapsed),
    ...counts,
    answerMs: answerTimes(answerMs),
    unavailableCauses: [...causes.causes].map(([cause, answers]) => ({ cause, answers })),
    transactions: wrapper.counts.transactions,
    conflicts: wrapper.counts.cancelled,
    writesRefused: wrapper.counts.writesRefused,
    callsPerChange: round(landed > 0 ? causes.sent.calls / landed : 0),
    storeCallsPerChange: round(landed > 0 ? (causes.sent.calls - causes.sent.refused) / landed : 0),
    conflictsPerChange: round(landed > 0 ? wrapper.counts.cancelled / landed : 0),
    contested: contestedShapes(wrapper.counts.contested, account.accountId),
  };
}

function answerTimes(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    p50: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1) ?? 0),
  };
}

/** Contested items by kind (their keys generalised: `TICKET_STATS#<acc>#agent / <id>`), the five most. */
function contestedShapes(contested: Map<string, number>, accountId: string) {
  const byShape = new Map<string, number>();
  for (const [item, n] of contested) {
    const [, pk, sk] = JSON.parse(item) as [string, string, string];
    const shape = shapeOf({ pk, sk }, [accountId]).replace(/#\d+$/, '#<n>').replace(/ \d+$/, ' <n>');
    byShape.set(shape, (byShape.get(shape) ?? 0) + n);
  }
  return [...byShape]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([shape, conflicts]) => ({ shape, conflicts }));
}

/** `npm run bench -- --contention`: 16 and 64 writers, each as DynamoDB Local is and as DynamoDB conflicts. */
export async function runContentionOnly(options: {
  endpoint: string;
  seconds: number;
  numberedFrom?: number | undefined;
  /** Only this many writers (16 and 64 by default). */
  writers?: number | undefined;
}): Promise<void> {
  await runPart({
    file: 'results-contention.json',
    mode: `contention, ${options.seconds} s a run${options.numberedFrom ? `, tickets numbered from ${options.numberedFrom}` : ''}`,
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async () => {
      const runs: ContentionResult[] = [];
      for (const writers of options.writers ? [options.writers] : [16, 64]) {
        for (const conflicts of [false, true]) {
          const result = await measureContention({
            writers,
            seconds: options.seconds,
            agents: 20,
            conflicts,
            numberedFrom: options.numberedFrom,
            slug: `contention-${writers}-${conflicts ? 'dynamodb' : 'local'}`,
          });
          for (const c of result.contested) log(`      contested: ${c.shape} ${c.conflicts}`);
          for (const c of result.unavailableCauses) log(`      503: ${c.answers} × ${c.cause}`);
          log(
            `  ${String(writers).padStart(2)} writers, ${conflicts ? 'conflicts as DynamoDB' : 'DynamoDB Local as is '}: ${result.landedPerSecond} changes/s landed (${result.creates} creates, ${result.updates} updates), ${result.conflicts} conflicts (${result.conflictsPerChange} a change), ${result.callsPerChange} calls a change (${result.storeCallsPerChange} reaching the store), ${result.unavailable} answers 503; answers p50 ${result.answerMs.p50} ms, p99 ${result.answerMs.p99} ms, max ${result.answerMs.max} ms`,
          );
          runs.push(result);
        }
      }
      return { runs };
    },
  });
}
