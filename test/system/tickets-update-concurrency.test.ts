import { describe, expect, it } from 'vitest';
import { getTicketStats } from '#lib/data/tickets/tickets.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { seededRandom } from '#test/support/random.ts';
import { withRetries } from '#test/support/retries.ts';

/**
 * decisions.md, "One ticket: read and update": lists, filters, totals, search and the least-busy open-work
 * counts reflect every update at once; after any mix of concurrent updates, each filter's total is a recount.
 */
const gateway = useGateway();

const TICKETS = 10;
const PATCHES = 200;
const BATCH = 50;
const STATUSES = ['open', 'pending', 'in_progress', 'resolved'] as const;
const ALL_STATUSES = [...STATUSES, 'closed'];
const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
const PLANS = ['gold', 'silver', 'bronze'] as const;
const OPEN_WORK = ['open', 'pending', 'in_progress'];

/** How many times each value occurs. */
function countBy(values: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

/** A word of fixed width: no word of the run is a prefix of another, so a search finds exactly its tickets. */
const word = (n: number) => `alpha${String(n).padStart(4, '0')}`;

interface Listed {
  uuid: string;
  subject: string;
  status: string;
  priority: string;
  assignee: { id: number } | null;
  custom_fields: Record<string, unknown>;
}

describe('concurrent updates', () => {
  it(`${PATCHES} concurrent PATCHes over ${TICKETS} tickets keep every total, search and open-work count exact`, async () => {
    const account = await createTestAccount({
      agents: Array.from({ length: 4 }, (_, i) => ({ email: `a${i}@desk.test`, name: `Agent ${i}` })),
    });
    const key = account.apiKey;
    const agentIds = account.agents.map((a) => a.id);
    const rng = seededRandom(20_260_522);

    // Ten tickets, each with a word of its own in its subject.
    const wordsOf = new Map<string, Set<string>>();
    const tickets: string[] = [];
    for (let i = 0; i < TICKETS; i++) {
      const w = word(9000 + i);
      const response = await gateway.call('POST', '/api/tickets', {
        key,
        body: {
          subject: `${w} start`,
          description: 'd',
          requester_email: `r${i}@client.test`,
          custom_fields: { plan: 'gold', seats: 1 },
        },
      });
      expect(response.status).toBe(201);
      tickets.push(response.body.ticket.uuid);
      wordsOf.set(response.body.ticket.uuid, new Set([w]));
    }

    // Every PATCH changes the subject (to a word of its own), and some of status, priority, assignee, fields.
    const patches = Array.from({ length: PATCHES }, (_, n) => {
      const uuid = rng.pick(tickets);
      const body: Record<string, unknown> = { subject: `${word(n)} common` };
      if (rng.chance(0.6)) body.status = rng.pick(STATUSES);
      if (rng.chance(0.5)) body.priority = rng.pick(PRIORITIES);
      if (rng.chance(0.5)) body.assignee_id = rng.chance(0.2) ? null : rng.pick(agentIds);
      if (rng.chance(0.5)) {
        body.custom_fields = {
          plan: rng.chance(0.2) ? null : rng.pick(PLANS),
          ...(rng.chance(0.5) ? { seats: rng.pick([1, 2, 3]) } : {}),
          ...(rng.chance(0.3) ? { vip: rng.chance(0.5) } : {}),
        };
      }
      wordsOf.get(uuid)?.add(word(n));
      return { uuid, body };
    });

    // Each PATCH as the contract's client sends it: with an Idempotency-Key, sent again after a 503. Fifty at once
    // on one DynamoDB Local queue behind each other, and on a loaded machine the last pass the request's 8.5 s
    // deadline (503: its store call aborted, or its conflict retries stopped), which no one of them would on DynamoDB.
    // The PATCHes' store calls are counted (withFault without a fault), and the most commits their races call for: a
    // PATCH commits once, and again only when another PATCH of its ticket landed after its read (StaleVersion), so
    // k PATCHes of one ticket in one batch make at most k(k+1)/2 commits; and each 503 at most one more (its commit
    // cut by the deadline).
    const responses: Awaited<ReturnType<typeof gateway.call>>[] = [];
    let racesAllow = 0;
    let retried = 0;
    const patchOnce = (p: (typeof patches)[number], n: number) => async () => {
      const answer = await gateway.call('PATCH', `/api/tickets/${p.uuid}`, {
        key,
        body: p.body,
        headers: { 'Idempotency-Key': `patch-${n}` },
      });
      if (answer.status === 503) retried++;
      return answer;
    };
    const { operations } = await withFault(undefined, async () => {
      for (let i = 0; i < PATCHES; i += BATCH) {
        const batch = patches.slice(i, i + BATCH);
        for (const k of countBy(batch.map((p) => p.uuid)).values()) racesAllow += (k * (k + 1)) / 2;
        responses.push(...(await Promise.all(batch.map((p, j) => withRetries(patchOnce(p, i + j))))));
      }
    });
    const statuses = responses.map((r) => r.status);
    expect(
      statuses.filter((s) => s !== 200),
      JSON.stringify(responses.find((r) => r.status !== 200)?.body),
    ).toEqual([]);
    const commits = operations.filter((o) => o === 'TransactWriteItems').length;

    // All tickets, read through the list (every page).
    const all: Listed[] = [];
    for (let page = 1; ; page++) {
      const response = await gateway.call('GET', `/api/tickets?per_page=100&page=${page}`, { key });
      expect(response.status).toBe(200);
      all.push(...response.body.data);
      if (page >= response.body.meta.last_page) break;
    }
    expect(all.map((t) => t.uuid).sort()).toEqual([...tickets].sort());

    // No lost update: each PATCH of a ticket made its own version, and the ticket now is what the PATCH that
    // made its current version answered.
    for (const uuid of tickets) {
      const mine = responses.filter((_, i) => patches[i]?.uuid === uuid);
      const etags = mine.map((r) => r.headers.get('etag'));
      expect(new Set(etags).size, uuid).toBe(mine.length);
      const now = await gateway.call('GET', `/api/tickets/${uuid}`, { key });
      const last = mine.find((r) => r.headers.get('etag') === now.headers.get('etag'));
      expect(last?.body.ticket, uuid).toEqual(now.body.data);
      expect(all.find((t) => t.uuid === uuid)?.subject).toBe(now.body.data.subject);
    }

    // Every filter's total, and the tickets it lists, equal a recount.
    const filters: [string, (t: Listed) => boolean][] = [
      ...ALL_STATUSES.map((s): [string, (t: Listed) => boolean] => [`status=${s}`, (t) => t.status === s]),
      ...PRIORITIES.map((p): [string, (t: Listed) => boolean] => [`priority=${p}`, (t) => t.priority === p]),
      ...agentIds.map((id): [string, (t: Listed) => boolean] => [
        `assignee_id=${id}`,
        (t) => t.assignee?.id === id,
      ]),
      ...[...PLANS, 'null'].map((plan): [string, (t: Listed) => boolean] => [
        `custom_fields[plan]=${plan}`,
        (t) => t.custom_fields.plan === plan,
      ]),
      ...[1, 2, 3].map((n): [string, (t: Listed) => boolean] => [
        `custom_fields[seats]=${n}`,
        (t) => t.custom_fields.seats === n,
      ]),
      ...[true, false].map((b): [string, (t: Listed) => boolean] => [
        `custom_fields[vip]=${b}`,
        (t) => t.custom_fields.vip === b,
      ]),
      ...STATUSES.map((s): [string, (t: Listed) => boolean] => [
        `status=${s}&priority=high`,
        (t) => t.status === s && t.priority === 'high',
      ]),
      ['search=common', () => true],
      ['search=start', () => false],
    ];
    const checked = await Promise.all(
      filters.map(async ([query, holds]) => {
        const response = await gateway.call('GET', `/api/tickets?per_page=100&${query}`, { key });
        return { query, response, expected: all.filter(holds).map((t) => t.uuid) };
      }),
    );
    const used = new Set<number>();
    for (const { query, response, expected } of checked) {
      expect(response.status, query).toBe(200);
      expect(response.body.meta.total, query).toBe(expected.length);
      expect(response.body.data.map((t: Listed) => t.uuid).sort(), query).toEqual([...expected].sort());
      used.add(expected.length);
    }
    // The run moved tickets around: the filters were not all trivially empty or full.
    expect(used.size).toBeGreaterThan(2);

    // Search finds each ticket by the word of its current subject, and by no word it no longer has.
    const searches = [...wordsOf].flatMap(([uuid, words]) => [...words].map((w) => ({ uuid, w })));
    expect(searches.length).toBe(PATCHES + TICKETS);
    const found = await Promise.all(
      searches.map(async ({ uuid, w }) => {
        const response = await gateway.call('GET', `/api/tickets?per_page=100&search=${w}`, { key });
        return { uuid, w, response };
      }),
    );
    for (const { uuid, w, response } of found) {
      const subject = all.find((t) => t.uuid === uuid)?.subject ?? '';
      const has = subject.split(' ').includes(w);
      expect(response.status, w).toBe(200);
      expect(
        response.body.data.map((t: Listed) => t.uuid),
        `${w} (subject now "${subject}")`,
      ).toEqual(has ? [uuid] : []);
      expect(response.body.meta.total, w).toBe(has ? 1 : 0);
    }

    // Each agent's open-work count (the least-busy counter) equals a recount of the listed tickets.
    const { busy } = await getTicketStats(account.accountId);
    for (const id of agentIds) {
      const recount = all.filter((t) => t.assignee?.id === id && OPEN_WORK.includes(t.status)).length;
      expect(busy[id] ?? 0, `agent ${id}`).toBe(recount);
    }
    expect(Object.keys(busy).filter((id) => !agentIds.includes(Number(id)) && busy[id] !== 0)).toEqual([]);

    // No retry storm: the PATCHes committed no more often than their races on each ticket call for (517 to 556
    // commits in runs at load 4 to 7, of 685 allowed). This was a time bound (the PATCHes within 20 s: 15 s
    // alone), which measured the machine: 17.5 to 21.3 s at load 4 to 7, 22.8 s on one core.
    const figures = `${commits} commits of ${racesAllow + retried} allowed; ${retried} answers 503 and sent again`;
    expect(commits, figures).toBeGreaterThanOrEqual(PATCHES);
    expect(commits, figures).toBeLessThanOrEqual(racesAllow + retried);
    console.log(`the PATCHes: ${figures}`);
    // Its bound is on commits, not time: 16-31 s in a run alone, past 60 s in each of two runs side by side with
    // a second test run (load 12-14), where every store call waits its turn.
  }, 240_000);
});
