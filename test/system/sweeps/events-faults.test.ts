import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_CACHE_SECONDS } from '#lib/accounts/config-cache.ts';
import { setClock, systemClock } from '#lib/time.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { type FeedEvent, readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * The events feed under store faults (decisions.md, "Events": a change and its event exist together or not at
 * all; a replayed Idempotency-Key request writes none). Every DynamoDB call of a ticket create and PATCH, a deal
 * create (existing contact, new contact) and PATCH, and a contact PATCH fails in turn: before reaching the store,
 * after the store did its work, or refused as a transaction conflict (writes other than the sequence counters,
 * which no transaction holds). The request answers 2xx or 503 (409 for a refused claim); a retry with the same
 * Idempotency-Key answers 2xx. After each round, the feed's new events are exactly that round's one change (its
 * object and version: the ETag), and they come without waiting for the settle window unless the fault lost the
 * answer of the UpdateItem that took the place (a writer that knows its place closes it); at the end, each object's events are its versions 1..ETag, each event's object
 * is the GET answer taken right after that version was written, the last one equal to the GET now (but for
 * fields other objects' changes move without an event of their own) and every event's object exists.
 */
const gateway = useGateway();
/**
 * EVENT_SETTLE_MS, read at each use: long, so that a place its writer failed to close holds the feed and the
 * round's wait fails; short only in a round whose writer cannot know its place (the answer of the UpdateItem
 * that took it lost), whose place a reader must close.
 */
const WRITER_CLOSES = '60000';
const READER_CLOSES = '300';
let settleBefore: string | undefined;
beforeAll(() => {
  settleBefore = process.env.EVENT_SETTLE_MS;
  process.env.EVENT_SETTLE_MS = WRITER_CLOSES;
});
afterAll(() => {
  if (settleBefore === undefined) delete process.env.EVENT_SETTLE_MS;
  else process.env.EVENT_SETTLE_MS = settleBefore;
});

const MODES: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
const WRITES = new Set(['PutItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);
const newTag = () => `f${randomBytes(5).toString('hex')}`;
/** The round a tag was first seen in: a PATCH's body depends on it alone, so the retry sends the same body. */
function rounds() {
  const seen = new Map<string, number>();
  return (tag: string) => {
    if (!seen.has(tag)) seen.set(tag, seen.size);
    return seen.get(tag) as number;
  };
}

type Answer = Awaited<ReturnType<typeof gateway.call>>;
type Resource = 'ticket' | 'deal' | 'contact';
const PATHS: Record<Resource, string> = { ticket: 'tickets', deal: 'deals', contact: 'contacts' };
const versionOf = (answer: Answer) => Number(/^"(\d+)"$/.exec(answer.headers.get('etag') ?? '')?.[1]);

/** A change the API told a client about: which object, at which version. */
interface Change {
  resource: Resource;
  uuid: string;
  version: number;
}
const changeName = (c: Change) =>
  `${c.resource}.${c.version === 1 ? 'created' : 'updated'} ${c.uuid} v${c.version}`;
const eventChange = (e: FeedEvent): Change => ({
  resource: e.type.split('.')[0] as Resource,
  uuid: String(e.data.object.uuid),
  version: e.data.version,
});

/**
 * What other objects' changes move in a GET answer without an event of the object's own: a contact's count of
 * open deals (a deal created or won), the contact a deal shows (a contact renamed).
 */
function ownFields(resource: Resource, object: Record<string, unknown>) {
  const { open_deals_count: _count, ...contact } = object;
  const { contact: _contact, ...deal } = object;
  return resource === 'contact' ? contact : resource === 'deal' ? deal : object;
}

/** One account's objects, each version as GET answered it just after that version was written. */
function ledgerOf(account: TestAccount) {
  const key = account.apiKey;
  const objects = new Map<string, { resource: Resource; label: string; versions: Map<number, unknown> }>();
  let feedEnd: string | undefined;
  const problems: string[] = [];

  /** GETs the object now; keeps the answer as its current version's. */
  async function snapshot(resource: Resource, uuid: string, label: string): Promise<number> {
    const r = await gateway.call('GET', `/api/${PATHS[resource]}/${uuid}`, { key });
    expect(r.status, `${label}: GET ${resource} ${uuid}: ${r.text}`).toBe(200);
    const version = versionOf(r);
    const known = objects.get(uuid) ?? { resource, label, versions: new Map() };
    known.versions.set(version, r.body.data);
    objects.set(uuid, known);
    return version;
  }

  const feed = (after?: string) => readFeedToEnd(gateway.call, key, { after, limit: 7 });

  /**
   * The feed's events after the last ones checked: exactly `changes` (in any order). A place whose writer lost
   * its answer stays open until the event after it is EVENT_SETTLE_MS old: waited for.
   */
  async function expectNewEvents(changes: Change[], label: string) {
    const want = changes.map(changeName).sort();
    let got: string[] = [];
    const read = await waitFor(
      async () => {
        const r = await feed(feedEnd);
        got = r.events.map((e) => changeName(eventChange(e))).sort();
        return got.length >= want.length && r;
      },
      { timeout: 10_000, label: `${label}: the events ${want.join(', ')} (seen ${got.join(', ')})` },
    );
    if (!isDeepStrictEqual(got, want))
      problems.push(`${label}: new events ${got.join(', ')}, want ${want.join(', ')}`);
    feedEnd = read.events.at(-1)?.id ?? feedEnd;
  }

  /** The whole feed against every object known: versions 1..ETag, one event each, as GET answered them. */
  async function checkFeed() {
    const { events } = await readFeedToEnd(gateway.call, key, { limit: 100 });
    const byObject = new Map<string, FeedEvent[]>();
    const ids = new Set<string>();
    for (const e of events) {
      if (ids.has(e.id)) problems.push(`event ${e.id} twice in the feed`);
      ids.add(e.id);
      const uuid = String(e.data.object.uuid);
      byObject.set(uuid, [...(byObject.get(uuid) ?? []), e]);
    }
    for (const [uuid, mine] of byObject) {
      if (!objects.has(uuid)) {
        const resource = eventChange(mine[0] as FeedEvent).resource;
        const r = await gateway.call('GET', `/api/${PATHS[resource]}/${uuid}`, { key });
        problems.push(`events of ${resource} ${uuid}, which no change made (GET answers ${r.status})`);
      }
    }
    for (const [uuid, known] of objects) {
      const mine = byObject.get(uuid) ?? [];
      const now = await gateway.call('GET', `/api/${PATHS[known.resource]}/${uuid}`, { key });
      if (now.status !== 200) {
        problems.push(`${known.label}: ${known.resource} ${uuid} has events but GET answers ${now.status}`);
        continue;
      }
      const current = versionOf(now);
      const versions = mine.map((e) => e.data.version);
      const want = Array.from({ length: current }, (_, i) => i + 1);
      if (!isDeepStrictEqual(versions, want)) {
        problems.push(
          `${known.label}: ${known.resource} ${uuid} at version ${current} has events of versions ${versions.join(',')}`,
        );
        continue;
      }
      for (const e of mine) {
        const type = `${known.resource}.${e.data.version === 1 ? 'created' : 'updated'}`;
        if (e.type !== type)
          problems.push(`${known.label}: event ${e.id} of version ${e.data.version} is a ${e.type}`);
        const then = known.versions.get(e.data.version);
        if (then !== undefined && !isDeepStrictEqual(e.data.object, then))
          problems.push(
            `${known.label}: ${known.resource} ${uuid} v${e.data.version}: the event has ${JSON.stringify(e.data.object)}, GET answered ${JSON.stringify(then)}`,
          );
      }
      const last = mine.at(-1)?.data.object ?? {};
      if (!isDeepStrictEqual(ownFields(known.resource, last), ownFields(known.resource, now.body.data)))
        problems.push(
          `${known.label}: ${known.resource} ${uuid}: the last event has ${JSON.stringify(last)}, GET answers ${now.text}`,
        );
    }
    return { events: events.length, objects: objects.size };
  }

  return { snapshot, expectNewEvents, checkFeed, problems };
}

interface Sweep {
  /** The request, with its Idempotency-Key; `tag` makes its body unique. */
  send: (tag: string, idempotencyKey: string) => Promise<Answer>;
  /** The changes its 2xx answer reports (snapshots taken). */
  changes: (answer: Answer, label: string) => Promise<Change[]>;
}

/**
 * Each call position of the request (counted on a dry run), in each fault mode: the faulted request, its retry
 * with the same key (until it is not 409 "still running"), then the feed's new events against the changes.
 */
async function sweep(ledger: ReturnType<typeof ledgerOf>, name: string, { send, changes }: Sweep) {
  const warm = await send(newTag(), `warm-${newTag()}`);
  expect(warm.status, warm.text).toBeLessThan(300);
  await ledger.expectNewEvents(await changes(warm, `${name} warm`), `${name} warm`);
  const dry = await withFault(undefined, () => send(newTag(), `dry-${newTag()}`));
  // Copied at once: withFault's list keeps counting the calls made after it returned.
  const operations = [...dry.operations];
  expect(dry.result.status, dry.result.text).toBeLessThan(300);
  await ledger.expectNewEvents(await changes(dry.result, `${name} dry`), `${name} dry`);
  const outcomes: string[] = [];
  for (const mode of MODES) {
    for (let at = 1; at <= operations.length; at++) {
      if (mode === 'conflict' && !WRITES.has(operations[at - 1] ?? '')) continue;
      const label = `${name}: ${mode} at call ${at} of ${operations.join(',')}`;
      // A round whose calls up to the faulted one are not the dry run's (the account's settings, cached 30 s, read
      // again: a Query more, on a loaded machine) faulted another call: checked as any round, then run again.
      for (let tries = 1; ; tries++) {
        const calls = await round(ledger, { send, changes }, { at, mode, label });
        outcomes.push(`${mode}@${at}:${calls.status}`);
        const same = isDeepStrictEqual(calls.operations.slice(0, at), operations.slice(0, at));
        if (same) break;
        if (tries === 3) {
          ledger.problems.push(
            `${label}: the faulted call was ${calls.operations[at - 1]} (${calls.operations})`,
          );
          break;
        }
      }
    }
  }
  // The sweep did fail requests: a fault that never surfaced would prove nothing.
  expect(outcomes.filter((o) => o.endsWith(':503')).length, outcomes.join(' ')).toBeGreaterThan(2);
  return operations.length;
}

/**
 * One faulted request, its retry with the same key (until it is not 409 "still running"), then the feed's new
 * events against the changes; the faulted request's status and calls.
 */
async function round(
  ledger: ReturnType<typeof ledgerOf>,
  { send, changes }: Sweep,
  { at, mode, label }: { at: number; mode: FaultMode; label: string },
): Promise<{ status: number; operations: string[] }> {
  const tag = newTag();
  const key = `k-${tag}`;
  const first = await withFault({ at, mode }, () => send(tag, key));
  // The first UpdateItem counts the request's rate; the later ones take event places. Told by the calls this request
  // made (only readers read the window, and none ran yet).
  const faulted = first.operations[at - 1];
  const placeLost =
    mode === 'lost-answer' && faulted === 'UpdateItem' && at !== first.operations.indexOf('UpdateItem') + 1;
  process.env.EVENT_SETTLE_MS = placeLost ? READER_CLOSES : WRITER_CLOSES;
  const allowed = mode === 'conflict' ? [503, 409] : [503];
  if (first.result.status >= 300 && !allowed.includes(first.result.status))
    ledger.problems.push(`${label}: answered ${first.result.status} ${first.result.text}`);
  let retry = await send(tag, key);
  for (let i = 0; retry.status === 409 && i < 30; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    retry = await send(tag, key);
  }
  expect(retry.status, `${label}: the retry answered ${retry.text}`).toBeLessThan(300);
  if (first.result.status < 300 && retry.text !== first.result.text)
    ledger.problems.push(`${label}: the replay differs from the first answer`);
  await ledger.expectNewEvents(await changes(retry, label), label);
  process.env.EVENT_SETTLE_MS = WRITER_CLOSES;
  return { status: first.result.status, operations: [...first.operations] };
}

const stages = (names: string[], probabilities: number[]) =>
  names.map((name, i) => ({ name, color: `#00000${i}`, probability: probabilities[i] ?? 0 }));

async function setUp() {
  const account = await createTestAccount({
    pipelines: [
      { name: 'Sales', default: true, stages: stages(['Lead', 'Proposal', 'Closing'], [10, 35, 80]) },
    ],
    contacts: [
      { email: 'kim@faults.test', first_name: 'Kim', last_name: 'Known' },
      { email: 'pat@faults.test', first_name: 'Pat', last_name: 'Patched' },
    ],
  });
  const ledger = ledgerOf(account);
  const contacts = account.contacts as { uuid: string; email: string }[];
  // The account file's contacts have their created events.
  const initial: Change[] = [];
  for (const c of contacts) {
    initial.push({
      resource: 'contact',
      uuid: c.uuid,
      version: await ledger.snapshot('contact', c.uuid, 'account file'),
    });
  }
  await ledger.expectNewEvents(initial, 'account file');
  const key = account.apiKey;
  const call = (method: string, path: string, body: unknown, idempotencyKey: string) =>
    gateway.call(method, path, { key, body, headers: { 'Idempotency-Key': idempotencyKey } });
  return { account, ledger, contacts, call };
}

/** The ETag version a PATCH answered, checked one past the one before (exactly one change landed). */
function patched(ledger: ReturnType<typeof ledgerOf>, resource: Resource, uuid: string, from = 1) {
  let version = from;
  return async (answer: Answer, label: string): Promise<Change[]> => {
    const answered = versionOf(answer);
    const now = await ledger.snapshot(resource, uuid, label);
    if (answered !== version + 1 || now !== answered)
      ledger.problems.push(`${label}: version ${version} before, the PATCH answered ${answered}, GET ${now}`);
    version = now;
    return [{ resource, uuid, version: now }];
  };
}

describe('every committed change has one event, whatever store call fails', () => {
  it('tickets: create and PATCH', async () => {
    const { ledger, call } = await setUp();
    const body = (tag: string) => ({
      subject: `Printer ${tag}`,
      description: 'd',
      requester_email: `${tag}@faults.test`,
    });
    const createChanges = async (answer: Answer, label: string): Promise<Change[]> => {
      const uuid = answer.body.ticket.uuid as string;
      const version = await ledger.snapshot('ticket', uuid, label);
      return [{ resource: 'ticket', uuid, version }];
    };
    const creates = await sweep(ledger, 'ticket create', {
      send: (tag, k) => call('POST', '/api/tickets', body(tag), k),
      changes: createChanges,
    });
    const target = await call('POST', '/api/tickets', body(newTag()), `target-${newTag()}`);
    expect(target.status, target.text).toBe(201);
    const uuid = target.body.ticket.uuid as string;
    await ledger.expectNewEvents(await createChanges(target, 'PATCH target'), 'PATCH target');
    const roundOf = rounds();
    const priorities = ['low', 'medium', 'high', 'urgent'];
    const patches = await sweep(ledger, 'ticket PATCH', {
      send: (tag, k) =>
        call(
          'PATCH',
          `/api/tickets/${uuid}`,
          { subject: `Printer ${tag}`, priority: priorities[roundOf(tag) % 4], tags: [tag] },
          k,
        ),
      changes: patched(ledger, 'ticket', uuid),
    });
    const seen = await ledger.checkFeed();
    expect(ledger.problems, JSON.stringify(seen)).toEqual([]);
    expect(creates).toBeGreaterThanOrEqual(5);
    expect(patches).toBeGreaterThanOrEqual(4);
  }, 180_000);

  it('deals: create with an existing contact, with a new contact, and PATCH', async () => {
    const { ledger, call, account } = await setUp();
    const stageIds = (account.pipelines as { stages: { id: number }[] }[])[0]?.stages.map((s) => s.id) ?? [];
    const createChanges = async (answer: Answer, label: string): Promise<Change[]> => {
      const deal = answer.body.data as { uuid: string; contact: { uuid: string; email: string } };
      const changes: Change[] = [
        { resource: 'deal', uuid: deal.uuid, version: await ledger.snapshot('deal', deal.uuid, label) },
      ];
      // A contact made by this create: its created event comes with the deal's.
      if (deal.contact.email !== 'kim@faults.test')
        changes.push({
          resource: 'contact',
          uuid: deal.contact.uuid,
          version: await ledger.snapshot('contact', deal.contact.uuid, label),
        });
      return changes;
    };
    const existing = await sweep(ledger, 'deal create (existing contact)', {
      send: (tag, k) =>
        call(
          'POST',
          '/api/deals',
          { name: `Deal ${tag}`, amount: 12.5, contact_email: 'kim@faults.test' },
          k,
        ),
      changes: createChanges,
    });
    const fresh = await sweep(ledger, 'deal create (new contact)', {
      send: (tag, k) =>
        call(
          'POST',
          '/api/deals',
          { name: `Deal ${tag}`, contact_email: `${tag}@faults.test`, contact_first_name: 'Nora' },
          k,
        ),
      changes: createChanges,
    });
    const target = await call(
      'POST',
      '/api/deals',
      { name: 'Target', contact_email: 'kim@faults.test' },
      `t-${newTag()}`,
    );
    expect(target.status, target.text).toBe(201);
    const uuid = target.body.data.uuid as string;
    await ledger.expectNewEvents(await createChanges(target, 'PATCH target'), 'PATCH target');
    const patch = (r: number, tag: string, k: string) => {
      const status = (['won', 'open', 'lost', 'open'] as const)[r % 4];
      return call(
        'PATCH',
        `/api/deals/${uuid}`,
        {
          name: `Deal ${tag}`,
          amount: r + 0.25,
          stage_id: stageIds[r % stageIds.length],
          status,
          ...(status === 'lost' ? { lost_reason: `Reason ${tag}` } : {}),
        },
        k,
      );
    };
    // Every status and stage the sweep sets, entered once before it: an update puts the directory entries of
    // dimensions new to its container beside its commit (one BatchWriteItem more), so the first PATCH into a status
    // or stage makes one call more than the same PATCH later, and a fault's position would not be the dry run's.
    const warm = patched(ledger, 'deal', uuid);
    const warming = Math.max(4, stageIds.length);
    for (let r = 0; r < warming; r++) {
      const answer = await patch(r, `w${r}`, `w-${newTag()}`);
      expect(answer.status, answer.text).toBe(200);
      await ledger.expectNewEvents(await warm(answer, `warm-up ${r}`), `warm-up ${r}`);
    }
    const roundOf = rounds();
    const patches = await sweep(ledger, 'deal PATCH', {
      send: (tag, k) => patch(roundOf(tag), tag, k),
      changes: patched(ledger, 'deal', uuid, 1 + warming),
    });
    const seen = await ledger.checkFeed();
    expect(ledger.problems, JSON.stringify(seen)).toEqual([]);
    expect(existing).toBeGreaterThanOrEqual(4);
    // A new contact's id is taken in the same update as the deal's number (lib/deals/create-deal.ts): the sweep
    // covers as many call positions as with an existing contact, where the id once took a call of its own.
    expect(fresh).toBe(existing);
    expect(patches).toBeGreaterThanOrEqual(4);
  }, 240_000);

  it('deals: a round whose create read the account settings again (their cache ran out) is run again', async () => {
    const { ledger, call } = await setUp();
    // The service's clock runs ahead of the wall clock by a cache's lifetime more before every third new request,
    // as a loaded machine's sweep outlives the cached settings: that request reads them again (a Query more).
    let ahead = 0;
    setClock({
      ...systemClock,
      nowMs: () => Date.now() + ahead,
      nowUs: () => systemClock.nowUs() + ahead * 1000,
    });
    const sent = new Set<string>();
    try {
      const calls = await sweep(ledger, 'deal create (settings read again)', {
        send: (tag, k) => {
          if (!sent.has(tag) && sent.add(tag).size % 3 === 0) ahead += (CONFIG_CACHE_SECONDS + 1) * 1000;
          return call(
            'POST',
            '/api/deals',
            { name: `Deal ${tag}`, contact_email: `${tag}@faults.test`, contact_first_name: 'Nora' },
            k,
          );
        },
        changes: async (answer, label) => {
          const deal = answer.body.data as { uuid: string; contact: { uuid: string } };
          return [
            { resource: 'deal', uuid: deal.uuid, version: await ledger.snapshot('deal', deal.uuid, label) },
            {
              resource: 'contact',
              uuid: deal.contact.uuid,
              version: await ledger.snapshot('contact', deal.contact.uuid, label),
            },
          ];
        },
      });
      expect(calls).toBeGreaterThanOrEqual(6);
    } finally {
      setClock();
    }
    expect(ledger.problems).toEqual([]);
  }, 240_000);

  it('contacts: PATCH of names and e-mails', async () => {
    const { ledger, call, contacts } = await setUp();
    const pat = contacts.find((c) => c.email === 'pat@faults.test')?.uuid as string;
    const roundOf = rounds();
    const patches = await sweep(ledger, 'contact PATCH', {
      send: (tag, k) =>
        call(
          'PATCH',
          `/api/contacts/${pat}`,
          {
            first_name: `Pat ${tag}`,
            ...(roundOf(tag) % 2 ? { email: `pat-${tag}@faults.test` } : { phone: `+1 555 ${roundOf(tag)}` }),
          },
          k,
        ),
      changes: patched(ledger, 'contact', pat),
    });
    const seen = await ledger.checkFeed();
    expect(ledger.problems, JSON.stringify(seen)).toEqual([]);
    expect(patches).toBeGreaterThanOrEqual(4);
  }, 180_000);
});
