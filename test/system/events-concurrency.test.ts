import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventKeys } from '#lib/data/keys.ts';
import { dynamo, queryAll, tableName } from '#lib/data/store/client.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { inPool } from '#test/support/deal-checks.ts';
import { type FeedEvent, readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { seededRandom } from '#test/support/random.ts';
import { withRetries } from '#test/support/retries.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * The events feed under concurrent writers and readers (decisions.md, "Events"): 8 writers create and PATCH
 * tickets, deals (with existing and new contacts) and contacts for EVENTS_CONCURRENCY_MS (20 s), while 4 readers
 * follow GET /api/events from the start in pages of 1 to 7. Then: every reader saw every event once, in the
 * feed's order (what it read live, then on to the end, equals the whole feed); each object's events are its
 * versions 1, 2 … up to its ETag, in feed order, the last one as its GET answers (but for fields other objects
 * move); the feed's events are exactly the changes the writers were answered 2xx for (object and version),
 * nothing else; reading on from an event id gives exactly the events after it. The time from a writer's 2xx to
 * the first reader seeing its event is printed (`events-latency:`) and bounded loosely. EVENTS_SEED replays the
 * writers' and readers' choices (not the machine's timing).
 */
const gateway = useGateway();
const WRITERS = 8;
const READERS = 4;
const DURATION_MS = Number(process.env.EVENTS_CONCURRENCY_MS ?? 20_000);
const SEED = Number(process.env.EVENTS_SEED ?? Date.now() % 1_000_000);
/** The settle window (10 s, a writer that died) plus polling: docs/data-model.md, "The invariant". */
const LATENCY_BOUND_MS = 15_000;
/**
 * EVENT_SETTLE_MS for the run (EVENTS_CONCURRENCY_SETTLE_MS; 0 keeps the service's 10 s): shorter than the
 * slowest commits here, so readers also close the places of live writers that are slow to commit, whose commits
 * must then fail whole and be retried (decisions.md: exactness never depends on the window). No writer dies in
 * this run: open places are held by slow commits, and the window barely moves the latency measured.
 */
const SETTLE_MS = Number(process.env.EVENTS_CONCURRENCY_SETTLE_MS ?? 100);
/**
 * Each commit (TransactWriteItems) waits up to this long before it is sent, as a slow network or a paused Lambda
 * makes it: places are taken in one order and commits land in another, so readers meet open places below
 * committed events (without it, a run on one machine hardly ever does).
 */
const COMMIT_DELAY_MS = Number(process.env.EVENTS_CONCURRENCY_COMMIT_DELAY_MS ?? 300);
const SLOW_COMMITS = 'eventsConcurrencySlowCommits';

let settleBefore: string | undefined;
beforeAll(() => {
  settleBefore = process.env.EVENT_SETTLE_MS;
  if (SETTLE_MS > 0) process.env.EVENT_SETTLE_MS = String(SETTLE_MS);
  const delays = seededRandom(SEED);
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand' && COMMIT_DELAY_MS > 0)
        await pause(delays.int(COMMIT_DELAY_MS));
      return next(args);
    },
    { step: 'initialize', name: SLOW_COMMITS },
  );
});
afterAll(() => {
  dynamo.middlewareStack.remove(SLOW_COMMITS);
  if (settleBefore === undefined) delete process.env.EVENT_SETTLE_MS;
  else process.env.EVENT_SETTLE_MS = settleBefore;
});

type Answer = Awaited<ReturnType<typeof gateway.call>>;
type Resource = 'ticket' | 'deal' | 'contact';
const PATHS: Record<Resource, string> = { ticket: 'tickets', deal: 'deals', contact: 'contacts' };
const versionOf = (answer: Answer) => Number(/^"(\d+)"$/.exec(answer.headers.get('etag') ?? '')?.[1]);
/** A change by what it made: the object and the version it gave it. */
const changeId = (resource: string, uuid: string, version: number) => `${resource} ${uuid} v${version}`;
const changeOf = (e: FeedEvent) =>
  changeId(e.type.split('.')[0] as string, String(e.data.object.uuid), e.data.version);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What other objects' changes move in a GET answer without an event of the object's own. */
function ownFields(resource: Resource, object: Record<string, unknown>) {
  const { open_deals_count: _count, ...contact } = object;
  const { contact: _contact, ...deal } = object;
  return resource === 'contact' ? contact : resource === 'deal' ? deal : object;
}

const stages = (names: string[], probabilities: number[]) =>
  names.map((name, i) => ({ name, color: `#00000${i}`, probability: probabilities[i] ?? 0 }));

/** The account, and what the writers made and were told: every change answered 2xx, and when. */
async function setUp() {
  // Deals are created for these contacts by e-mail: their e-mails never change (their names do).
  const steady = ['ann', 'bob', 'cy', 'dee'].map((n) => `${n}@events-conc.test`);
  const account = await createTestAccount({
    pipelines: [
      { name: 'Sales', default: true, stages: stages(['Lead', 'Proposal', 'Closing'], [10, 35, 80]) },
      { name: 'Renewals', stages: stages(['Upcoming', 'Signed'], [50, 90]) },
    ],
    contacts: steady.map((email, i) => ({ email, first_name: `C${i}`, last_name: 'Steady' })),
  });
  const state = {
    account,
    key: account.apiKey,
    steady,
    stageIds: (account.pipelines as { stages: { id: number }[] }[]).flatMap((p) => p.stages.map((s) => s.id)),
    objects: new Map<string, Resource>(),
    tickets: [] as string[],
    deals: [] as string[],
    steadyContacts: [] as string[],
    newContacts: [] as string[],
    acknowledged: new Map<string, number>(),
    problems: [] as string[],
    acknowledge(resource: Resource, uuid: string, version: number, label: string) {
      const id = changeId(resource, uuid, version);
      if (state.acknowledged.has(id)) state.problems.push(`${label}: ${id} was answered to two writes`);
      state.acknowledged.set(id, Date.now());
      state.objects.set(uuid, resource);
    },
  };
  // The account file's contacts are changes too (their created events).
  for (const c of account.contacts as { uuid: string }[]) {
    state.steadyContacts.push(c.uuid);
    state.acknowledge('contact', c.uuid, 1, 'account file');
  }
  return state;
}
type State = Awaited<ReturnType<typeof setUp>>;

/** One writer until the deadline: creates and PATCHes of every kind, each body unique (each PATCH changes). */
async function writer(s: State, w: number, deadline: number): Promise<number> {
  const random = seededRandom(SEED * 17 + w);
  let writes = 0;
  for (let n = 0; Date.now() < deadline; n++, writes++) {
    const tag = `w${w}n${n}`;
    const send = (method: string, path: string, body: unknown) =>
      withRetries(() =>
        gateway.call(method, path, { key: s.key, body, headers: { 'Idempotency-Key': `${tag}-${SEED}` } }),
      );
    const roll = random.next();
    let label: string;
    let answer: Answer;
    if (roll < 0.2 || s.tickets.length === 0) {
      label = `${tag} POST ticket`;
      answer = await send('POST', '/api/tickets', {
        subject: `Ticket ${tag}`,
        description: 'd',
        requester_email: `req-${tag}@events-conc.test`,
      });
      if (answer.status === 201) {
        s.tickets.push(answer.body.ticket.uuid);
        s.acknowledge('ticket', answer.body.ticket.uuid, 1, label);
      }
    } else if (roll < 0.4) {
      const uuid = random.pick(s.tickets);
      label = `${tag} PATCH ticket ${uuid}`;
      answer = await send('PATCH', `/api/tickets/${uuid}`, {
        subject: `Ticket ${tag}`,
        ...(random.chance(0.5) ? { priority: random.pick(['low', 'medium', 'high', 'urgent']) } : {}),
        ...(random.chance(0.4)
          ? { status: random.pick(['open', 'pending', 'in_progress', 'resolved']) }
          : {}),
      });
      if (answer.status === 200) s.acknowledge('ticket', uuid, versionOf(answer), label);
    } else if (roll < 0.64) {
      // A new contact's e-mail is one no one else uses: the deal makes the contact (its created event).
      const fresh = roll >= 0.52;
      label = `${tag} POST deal (${fresh ? 'new' : 'existing'} contact)`;
      answer = await send('POST', '/api/deals', {
        name: `Deal ${tag}`,
        amount: random.int(10_000) / 100,
        stage_id: random.pick(s.stageIds),
        ...(fresh
          ? { contact_email: `new-${tag}@events-conc.test`, contact_first_name: `New ${tag}` }
          : { contact_email: random.pick(s.steady) }),
      });
      if (answer.status === 201) {
        const deal = answer.body.data as { uuid: string; contact: { uuid: string } };
        s.deals.push(deal.uuid);
        s.acknowledge('deal', deal.uuid, 1, label);
        if (fresh) {
          s.newContacts.push(deal.contact.uuid);
          s.acknowledge('contact', deal.contact.uuid, 1, label);
        }
      }
    } else if (roll < 0.82 && s.deals.length > 0) {
      const uuid = random.pick(s.deals);
      label = `${tag} PATCH deal ${uuid}`;
      const body: Record<string, unknown> = { name: `Deal ${tag}` };
      if (random.chance(0.5)) body.stage_id = random.pick(s.stageIds);
      if (random.chance(0.4)) {
        // A lost_reason only with its lost status: alone, it is a 422 when another PATCH reopened the deal.
        const status = random.pick(['open', 'won', 'lost'] as const);
        body.status = status;
        if (status === 'lost' && random.chance(0.6)) body.lost_reason = `Reason ${tag}`;
      }
      if (random.chance(0.4)) body.amount = random.int(10_000) / 100;
      answer = await send('PATCH', `/api/deals/${uuid}`, body);
      if (answer.status === 200) s.acknowledge('deal', uuid, versionOf(answer), label);
    } else {
      // A contact's name; a deal-made contact's e-mail too (a fresh one: no race for it here).
      const movable = s.newContacts.length > 0 && random.chance(0.5);
      const uuid = random.pick(movable ? s.newContacts : s.steadyContacts);
      label = `${tag} PATCH contact ${uuid}`;
      answer = await send('PATCH', `/api/contacts/${uuid}`, {
        first_name: `Name ${tag}`,
        ...(movable && random.chance(0.6) ? { email: `moved-${tag}@events-conc.test` } : {}),
        ...(random.chance(0.3) ? { phone: `+1 555 ${random.int(10_000)}` } : {}),
      });
      if (answer.status === 200) s.acknowledge('contact', uuid, versionOf(answer), label);
    }
    if (answer.status >= 300) s.problems.push(`${label}: answered ${answer.status} ${answer.text}`);
  }
  return writes;
}

/**
 * One reader from the start while `writing()`: pages of 1..7, a short pause at the end of the feed. Marks when
 * each change was first seen by any reader.
 */
async function reader(
  s: State,
  r: number,
  writing: () => boolean,
  seen: Map<string, number>,
  pageSize = (random: ReturnType<typeof seededRandom>) => 1 + random.int(7),
) {
  const random = seededRandom(SEED * 31 + r);
  const events: FeedEvent[] = [];
  let after: string | undefined;
  let pages = 0;
  while (writing()) {
    const params = new URLSearchParams({ limit: String(pageSize(random)) });
    if (after) params.set('after', after);
    const page = await gateway.call('GET', `/api/events?${params}`, { key: s.key });
    pages++;
    if (page.status !== 200) {
      s.problems.push(`reader ${r}: GET /api/events?${params} answered ${page.status} ${page.text}`);
      await pause(100);
      continue;
    }
    const body = page.body as { data: FeedEvent[]; next_cursor: string | null };
    const now = Date.now();
    for (const e of body.data) if (!seen.has(changeOf(e))) seen.set(changeOf(e), now);
    events.push(...body.data);
    if (body.next_cursor === null) await pause(20 + random.int(30));
    else after = body.next_cursor;
  }
  return { events, after, pages };
}

describe('the events feed under concurrent writers and readers', () => {
  it(
    'every reader sees every committed change once, in order, and nothing else',
    async () => {
      const s = await setUp();
      const { key, problems, acknowledged } = s;
      let writing = true;
      const seen = new Map<string, number>();
      const readers = Array.from({ length: READERS }, (_, r) => reader(s, r, () => writing, seen));
      // A fifth reader with full pages measures when events become visible (the small-page readers above fall
      // behind the writers on a loaded machine, and then measure their own lag).
      const visible = new Map<string, number>();
      const probe = reader(
        s,
        READERS,
        () => writing,
        visible,
        () => 100,
      );
      const started = Date.now();
      const deadline = started + DURATION_MS;
      const counts = await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(s, w, deadline)));
      const writes = counts.reduce((a, b) => a + b, 0);
      const wrote = Date.now() - started;
      writing = false;
      const live = await Promise.all(readers);
      const probed = await probe;

      // Each reader reads on to the end (the feed may hold at a place whose writer is gone: the settle window).
      const want = acknowledged.size;
      const finals = await Promise.all(
        live.map(async (r, i) => {
          const random = seededRandom(SEED * 7 + i);
          let { events, after } = r;
          await waitFor(
            async () => {
              const tail = await readFeedToEnd(gateway.call, key, { after, limit: 1 + random.int(7) });
              const now = Date.now();
              for (const e of tail.events) if (!seen.has(changeOf(e))) seen.set(changeOf(e), now);
              events = [...events, ...tail.events];
              after = tail.events.at(-1)?.id ?? after;
              return events.length >= want;
            },
            { timeout: 20_000, interval: 200, label: `reader ${i} to reach ${want} events` },
          ).catch((error: Error) => problems.push(error.message));
          return events;
        }),
      );
      const { events: feed } = await readFeedToEnd(gateway.call, key, { limit: 100 });
      if (
        !isDeepStrictEqual(
          probed.events.map((e) => e.id),
          feed.slice(0, probed.events.length).map((e) => e.id),
        )
      ) {
        problems.push('the full-page reader did not read a prefix of the feed');
      }
      // Places closed without an event (a failed commit's, or a slow writer's closed by a reader), as stored.
      const voids = (
        await Promise.all(
          eventKeys.partitions(s.account.accountId).map((pk) =>
            queryAll({
              TableName: tableName(),
              KeyConditionExpression: 'pk = :pk',
              ExpressionAttributeValues: { ':pk': pk },
              ConsistentRead: true,
            }),
          ),
        )
      )
        .flat()
        .filter((item) => item.type === 'event_void').length;
      const summary = `seed ${SEED}; ${writes} writes in ${wrote} ms; ${feed.length} events, ${voids} void places; reader pages ${live.map((r) => r.pages).join(',')}`;

      // Every reader saw every event once, in the feed's order.
      for (const [i, events] of finals.entries()) {
        const ids = events.map((e) => e.id);
        if (new Set(ids).size !== ids.length) problems.push(`reader ${i}: an event served twice`);
        if (!isDeepStrictEqual(events, feed)) {
          const at = events.findIndex((e, k) => !isDeepStrictEqual(e, feed[k]));
          problems.push(
            `reader ${i}: ${events.length} events, the feed ${feed.length}; first difference at ${at}: ${events[at]?.id} vs ${feed[at]?.id}`,
          );
        }
      }

      // The feed's events are exactly the acknowledged changes.
      const got = feed.map(changeOf);
      if (new Set(got).size !== got.length) problems.push('the feed has two events for one change');
      const missing = [...acknowledged.keys()].filter((id) => !got.includes(id));
      const extra = got.filter((id) => !acknowledged.has(id));
      if (missing.length > 0)
        problems.push(`no event for ${missing.length} changes: ${missing.slice(0, 5).join('; ')}`);
      if (extra.length > 0)
        problems.push(
          `events of ${extra.length} changes no writer was told of: ${extra.slice(0, 5).join('; ')}`,
        );

      // Each object's events: its versions 1..ETag in feed order, created then updated; the last one as GET has it.
      const byObject = new Map<string, FeedEvent[]>();
      for (const e of feed) {
        const uuid = String(e.data.object.uuid);
        byObject.set(uuid, [...(byObject.get(uuid) ?? []), e]);
      }
      await inPool(
        8,
        [...s.objects].map(([uuid, resource]) => async () => {
          const now = await gateway.call('GET', `/api/${PATHS[resource]}/${uuid}`, { key });
          if (now.status !== 200) {
            problems.push(`${resource} ${uuid}: GET answered ${now.status}`);
            return;
          }
          const mine = byObject.get(uuid) ?? [];
          const versions = mine.map((e) => e.data.version);
          const current = versionOf(now);
          if (
            !isDeepStrictEqual(
              versions,
              Array.from({ length: current }, (_, k) => k + 1),
            )
          )
            problems.push(
              `${resource} ${uuid} at version ${current}: events of versions ${versions.join(',')}`,
            );
          for (const e of mine)
            if (e.type !== `${resource}.${e.data.version === 1 ? 'created' : 'updated'}`)
              problems.push(`${resource} ${uuid}: event ${e.id} of version ${e.data.version} is a ${e.type}`);
          const last = mine.at(-1)?.data.object ?? {};
          if (!isDeepStrictEqual(ownFields(resource, last), ownFields(resource, now.body.data)))
            problems.push(`${resource} ${uuid}: the last event has ${JSON.stringify(last)}, GET ${now.text}`);
        }),
      );

      // Reading on from an event id gives exactly the events after it; GET by id gives that event.
      const rnd = seededRandom(SEED);
      for (let n = 0; n < Math.min(20, feed.length); n++) {
        const k = rnd.int(feed.length);
        const from = feed[k] as FeedEvent;
        const limit = rnd.chance(0.2) ? 1 + rnd.int(7) : 25 + rnd.int(76);
        const { events } = await readFeedToEnd(gateway.call, key, { after: from.id, limit });
        if (!isDeepStrictEqual(events, feed.slice(k + 1)))
          problems.push(
            `after ${from.id} (limit ${limit}): ${events.length} events, want ${feed.length - k - 1}`,
          );
        const one = await gateway.call('GET', `/api/events/${from.id}`, { key });
        if (!isDeepStrictEqual(one.body?.data, from))
          problems.push(`GET /api/events/${from.id}: ${one.status} ${one.text}`);
      }

      // From a writer's 2xx to the first reader seeing the event (0 when a reader saw it before the answer came).
      const latencies = [...acknowledged]
        .filter(([id]) => seen.has(id))
        .map(([id, at]) => Math.max(0, (seen.get(id) as number) - at))
        .sort((a, b) => a - b);
      const p50 = latencies[Math.floor(latencies.length / 2)] ?? 0;
      const longest = latencies.at(-1) ?? 0;
      const visibleAfter = [...acknowledged]
        .filter(([id]) => visible.has(id))
        .map(([id, at]) => Math.max(0, (visible.get(id) as number) - at))
        .sort((a, b) => a - b);
      console.log(
        `events-latency: longest ${longest} ms, p50 ${p50} ms over ${latencies.length} changes (${summary}; checks took ${Date.now() - started - wrote} ms); ` +
          `visible to a full-page reader: longest ${visibleAfter.at(-1) ?? 0} ms, p50 ${visibleAfter[Math.floor(visibleAfter.length / 2)] ?? 0} ms over ${visibleAfter.length}`,
      );
      expect(problems, summary).toEqual([]);
      expect(longest, summary).toBeLessThan(LATENCY_BOUND_MS);
      // The run did race: changes of every kind.
      for (const type of [
        'ticket.created',
        'ticket.updated',
        'deal.created',
        'deal.updated',
        'contact.created',
        'contact.updated',
      ])
        expect(feed.filter((e) => e.type === type).length, `${type}; ${summary}`).toBeGreaterThan(1);
    },
    60_000 + DURATION_MS * 3,
  );
});
