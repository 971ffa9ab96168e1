import { withPassConfigVersions } from '#lib/accounts/config-cache.ts';
import { type EventDraft, type ReservedPlaces, sharingPlaceTakes } from '#lib/data/events.ts';
import { ALL_DUE_SHARDS, type DueCursors } from '#lib/data/index/due.ts';
import { lostToRace } from '#lib/data/store/errors.ts';
import type { Versioned } from '#lib/data/store/items.ts';
import { commitBreaches, dueTicketWindow, getTicketByOrderKey } from '#lib/data/tickets/tickets.ts';
import { fairShare } from '#lib/fair-share.ts';
import { logError } from '#lib/log.ts';
import { momentPassed, runTimeRules } from '#lib/rules/time-change.ts';
import { formatTimestamp, nowMicros, nowMillis, sleep } from '#lib/time.ts';
import { type DueTicket, dueReads } from './due-reads.ts';
import { breachesDue, breachesLost, withBreaches } from './owed-breaches.ts';
import { presentCreatedTicket } from './present.ts';
import type { ClockState } from './sla-clocks.ts';
import type { Ticket } from './types.ts';

/**
 * Service-level breaches on time (decisions.md, "Reply-based service levels"; docs/sla.md): every ticket with a
 * clock to watch has an entry in the keys-only due index at its soonest such due time, kept by the index engine
 * in the same commit as every change of the ticket (lib/data/tickets/ticket-index.ts, `due`). The runner reads the
 * entries that are due (a Query per due shard, never a Scan), reads each ticket (strongly consistent), decides
 * from what it stores which clocks have passed their due time uncompleted and unbreached, and commits their
 * breaches with a `ticket.sla_breached` event each, guarded by the version it read. So:
 * - a reply or resolution committed before the runner's commit either was read (the clock is completed: no
 *   breach) or refuses the commit (StaleVersion: read again, completed, no breach);
 * - a second runner, a retry or a runner that died after its commit reads the breach written (the clock's breach
 *   record names its cycle and due time) and writes nothing: once per clock cycle;
 * - a runner that died or stalled before its commit left the entry in place: the next pass writes the breach, as
 *   late as the stall, with `breached_at` and `data.due_at` the due time, never the time it was noticed.
 */

/** A pass over what is due: how many tickets were read, how many breaches written. */
export interface BreachPass {
  read: number;
  breached: number;
  /** Time rules fired (lib/rules/time-change.ts: the due entry is also the ticket's next time-rule moment). */
  fired: number;
  /** Tickets whose breach failed (logged; their entries stay for the next pass). */
  failed: number;
  /** Entries left for the next pass (more than `limit` were due). */
  more: boolean;
}

export interface BreachRunOptions {
  /** The due shards this runner reads (all by default): lib/data/webhooks/due-shards.ts, shardsOfRunner. */
  shards?: readonly number[] | undefined;
  /** Tickets served per pass, shared between the accounts due (lib/fair-share.ts; default PASS_LIMIT). */
  limit?: number;
  /** Due keys read per shard and pass (lib/data/index/due.ts, dueWindow; default DUE_WINDOW_PER_SHARD). */
  windowPerShard?: number;
  /**
   * Where this runner's reading of the due index stands in each shard (dueWindow): kept across the passes of one
   * run (runBreaches makes one); a pass without starts from the earliest due entries.
   */
  cursors?: DueCursors;
  /** Tickets worked at once (default PASS_CONCURRENCY). */
  concurrency?: number;
  /** What is done with an error the runner goes on after; logged by default. */
  onError?: ((error: unknown) => void) | undefined;
  /** Told of each ticket's time rules fired, with how many (the bench). */
  onRules?: ((accountId: string, orderKey: string, fired: number) => void) | undefined;
  /** Told of each breach written (tests, logs). */
  onBreach?: ((accountId: string, ticketUuid: string, clock: ClockState) => void) | undefined;
}

/**
 * Tickets a pass serves, and at once: each waits on its commit (its events' places taken with its chunk's read:
 * due-reads.ts), so the runner is bound by the store's latency, not its CPU. A pass's window is read whole each pass
 * (up to DUE_WINDOW_PER_SHARD keys a shard): 600 a pass read a third of the keys a firing that 200 did (npm run bench
 * -- --time-rules, docs/rules.md: 10,000 time rules due at one moment fired within 51-59 s of it here, bound by
 * DynamoDB Local's table lock).
 */
export const PASS_CONCURRENCY = 32;
export const PASS_LIMIT = 600;

/** Attempts of one ticket's breach commit against concurrent changes before leaving it for the next pass. */
const MAX_ATTEMPTS = 5;

/**
 * One pass: a window of the entries due now (a page a shard), `limit` of them served round-robin across their
 * accounts (fairShare: one account's burst leaves every other account due its share of the batch), each ticket's
 * breaches committed.
 */
export async function breachPass(options: BreachRunOptions = {}): Promise<BreachPass> {
  const limit = options.limit ?? PASS_LIMIT;
  const nowUs = nowMicros();
  const window = await dueTicketWindow(
    Math.floor(nowUs / 1000),
    options.shards ?? ALL_DUE_SHARDS,
    options.cursors ?? new Map(),
    options.windowPerShard,
  );
  const due = fairShare(window.entries, (entry) => entry.accountId, limit);
  // Its tickets read a hundred at a time as the workers reach them, with the places of their firings (due-reads.ts).
  const reads = dueReads(due);
  let breached = 0;
  let fired = 0;
  let failed = 0;
  let next = 0;
  const work = async () => {
    for (let i = next++; i < due.length; i = next++) {
      const entry = due[i];
      if (!entry) continue;
      let read: DueTicket | undefined;
      try {
        read = await reads.at(i);
        const stored = read?.stored;
        if (!stored) continue;
        // Awaited first: `breached += await …` would read the count before the await and lose the other workers'.
        // One read for both: the breaches owed, then (the same entry is the ticket's next time-rule moment when
        // that is sooner: ticket-index.ts, `due`) the time rules due, on the ticket as the breaches left it.
        const written = await breachTicket(entry.accountId, entry.orderKey, options, stored, read?.place);
        breached += written;
        const ruled = await timeRulesAfter(written, entry, stored, read?.place);
        fired += ruled;
        if (ruled > 0) options.onRules?.(entry.accountId, entry.orderKey, ruled);
      } catch (error) {
        // One ticket's failure (the store refusing its commit for a while) holds no other ticket's breach: its
        // entry stays, and the next pass tries it again.
        failed++;
        (options.onError ?? logError)(error);
      } finally {
        await reads.done(entry.accountId, read);
      }
    }
  };
  // Each account's configuration version read once in the pass (its time changes' getAccountConfig), not a ticket,
  // and the takes of one event shard's places asked while one is in flight sent as one (sharingPlaceTakes).
  const workers = Math.min(options.concurrency ?? PASS_CONCURRENCY, due.length);
  await withPassConfigVersions(() =>
    sharingPlaceTakes(() => Promise.all(Array.from({ length: workers }, work))),
  );
  // Again at once only when this pass wrote and found a full page: entries due but owing nothing yet (the index
  // behind a change by a moment, a due time within this millisecond) wait for the next poll, not a busy loop.
  const left = window.more || window.entries.length > due.length;
  return { read: due.length, breached, fired, failed, more: left && breached + fired > 0 };
}

/**
 * The time rules due on a ticket after its breaches: on the ticket as read when none was written (its place kept);
 * after a breach, read again, and only for a moment that has come (a breach keeps it; one a change set since the
 * read is the due entry the breach's commit left, which the next pass finds).
 */
function timeRulesAfter(
  breached: number,
  entry: { accountId: string; orderKey: string },
  stored: Versioned<Ticket>,
  place: ReservedPlaces | undefined,
): Promise<number> {
  if (breached === 0) return runTimeRules(entry.accountId, entry.orderKey, stored, place);
  return momentPassed(stored.entity, nowMicros())
    ? runTimeRules(entry.accountId, entry.orderKey)
    : Promise.resolve(0);
}

/**
 * Writes the breaches of one ticket that are due now (none: nothing), read again and decided again after a
 * concurrent change. Answers how many breaches were written. `first` and `place` as runTimeRules takes them.
 */
export async function breachTicket(
  accountId: string,
  orderKey: string,
  options: Pick<BreachRunOptions, 'onBreach'> = {},
  first?: Versioned<Ticket>,
  place?: ReservedPlaces,
): Promise<number> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    // The first attempt may take the ticket as the pass read it; a retry reads it again.
    const stored = attempt === 1 && first ? first : await getTicketByOrderKey(accountId, orderKey);
    if (!stored) return 0;
    const before = stored.entity;
    const clocks = breachesDue(before, nowMicros());
    if (clocks.length === 0) return 0;
    const after = withBreaches(before, clocks);
    const events = breachEvents(after, clocks, stored.version + 1);
    try {
      const reserved = attempt === 1 && first ? place : undefined;
      await commitBreaches(accountId, { before, after, version: stored.version }, events, reserved);
    } catch (error) {
      // As a time change's (lib/rules/time-change.ts): nothing was written; read and decide again.
      if (lostToRace(error)) continue;
      throw error;
    }
    for (const clock of clocks) options.onBreach?.(accountId, before.uuid, clock);
    return clocks.length;
  }
  return 0;
}

/**
 * The `ticket.sla_breached` events of these clocks, in the commit that writes their breach records: `data.object`
 * the ticket as that commit leaves it (its version), `data.metric`, `data.due_at` the due time that passed.
 */
export function breachEvents(ticket: Ticket, clocks: ClockState[], version: number): EventDraft[] {
  const object = presentCreatedTicket(ticket);
  return clocks.map((clock) => ({
    type: 'ticket.sla_breached',
    object,
    extra: { metric: clock.metric, due_at: formatTimestamp(clock.dueUs) },
    version,
  }));
}

/**
 * A change of the ticket (a message, a PATCH) with the breaches it would otherwise lose written
 * (breachesLost): the runner may not have passed since their due time, and once the change replaces the clock
 * (a new next-reply cycle, a moved due time) no runner would find them. Their records go on the ticket it
 * commits and their events in the same commit (breachEvents), guarded by the same version as the change, so
 * the runner's commit and the change's cannot both write one: exactly once per cycle, late by no more than the
 * runner's stall (docs/sla.md). Usually none: the runner wrote them within seconds of their due times.
 */
export function withLostBreaches(
  before: Ticket,
  after: Ticket,
  nowUs: number,
): { ticket: Ticket; clocks: ClockState[] } {
  const clocks = breachesLost(before, after, nowUs);
  return { ticket: clocks.length ? withBreaches(after, clocks) : after, clocks };
}

/** How often a runner looks at the due index when the last pass found nothing more (ms). */
export const BREACH_POLL_MS = 1_000;

/**
 * Passes until `until` (epoch ms) or until stopped: at once again while more is due, else every `pollMs`. A pass
 * that fails (the store unreachable for a while) is logged and tried again at the next poll: the entries stay.
 */
export async function runBreaches(
  until: number,
  options: BreachRunOptions & { pollMs?: number; stopped?: () => boolean } = {},
): Promise<{ passes: number; breached: number; failures: number; failedTickets: number }> {
  const totals = { passes: 0, breached: 0, failures: 0, failedTickets: 0 };
  // The run's place in the due index, from one pass to the next: a backlog is read a page further each pass.
  const cursors: DueCursors = options.cursors ?? new Map();
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await breachPass({ ...options, cursors });
      totals.passes++;
      totals.breached += pass.breached;
      totals.failedTickets += pass.failed;
      more = pass.more;
    } catch (error) {
      totals.failures++;
      (options.onError ?? logError)(error);
    }
    if (!more) await sleep(Math.min(options.pollMs ?? BREACH_POLL_MS, Math.max(0, until - nowMillis())));
  }
  return totals;
}
