import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestAccount } from '#test/support/accounts.ts';
import {
  checkBoards,
  checkLists,
  dealQueries,
  inPool,
  type PipelineShape,
  readDeals,
} from '#test/support/deal-checks.ts';
import { useGateway } from '#test/support/http.ts';
import { seededRandom } from '#test/support/random.ts';
import { withRetries } from '#test/support/retries.ts';

/**
 * Deals and contacts written concurrently (decisions.md, "Deals that move"): totals and board cells stay exact
 * after any mix of concurrent creates and updates, and a contact's e-mail stays unique when two PATCHes and a
 * deal creation race for it.
 */
const gateway = useGateway();
const IN_FLIGHT = 16;
const CURRENCIES = ['EUR', 'USD', 'GBP'] as const;

const stages = (names: string[], probabilities: number[]) =>
  names.map((name, i) => ({ name, color: `#00000${i}`, probability: probabilities[i] ?? 0 }));

/** The seeded generator, and amounts with cents from it. */
function random(seed: number) {
  const rnd = seededRandom(seed);
  return { ...rnd, cents: () => Number(`${rnd.int(5000)}.${String(rnd.int(100)).padStart(2, '0')}`) };
}

type Answer = Awaited<ReturnType<typeof gateway.call>>;

describe('concurrent deal writes', () => {
  it('200 PATCHes over 20 deals racing 50 creates: every total and board cell equals a recount', async () => {
    const seed = Number(process.env.DEALS_SEED ?? Date.now() % 1_000_000);
    const rnd = random(seed);
    const emails = ['ann@conc.test', 'bob@conc.test', 'cy@conc.test'];
    const account = await createTestAccount({
      pipelines: [
        { name: 'Sales', default: true, stages: stages(['Lead', 'Proposal', 'Closing'], [10, 35, 80]) },
        { name: 'Renewals', stages: stages(['Upcoming', 'Signed'], [50, 90]) },
      ],
      contacts: emails.map((email, i) => ({ email, first_name: `C${i}`, last_name: 'Conc' })),
    });
    const key = account.apiKey;
    const pipelines: PipelineShape[] = account.pipelines;
    const allStages = pipelines.flatMap((p) => p.stages);
    const dealBody = (i: number) => ({
      name: `Deal ${i}`,
      amount: rnd.cents(),
      currency: rnd.pick(CURRENCIES),
      stage_id: rnd.pick(allStages).id,
      contact_email: rnd.pick(emails),
    });
    const firstStatuses: number[] = [];
    const create = (i: number) =>
      withRetries(
        () =>
          gateway.call('POST', '/api/deals', {
            key,
            body: dealBodies[i],
            headers: { 'Idempotency-Key': `create-${i}` },
          }),
        firstStatuses,
      );
    const dealBodies = Array.from({ length: 70 }, (_, i) => dealBody(i));
    const uuids: string[] = [];
    for (const r of await inPool(
      IN_FLIGHT,
      Array.from({ length: 20 }, (_, i) => () => create(i)),
    )) {
      expect(r.status, r.text).toBe(201);
      uuids.push(r.body.data.uuid);
    }
    // Statuses are only ever written together with lost_reason when lost: a lone lost_reason would be a 422
    // whenever a concurrent PATCH reopened the deal first.
    const patchBody = () => {
      const body: Record<string, unknown> = {};
      if (rnd.chance(0.6)) body.stage_id = rnd.pick(allStages).id;
      if (rnd.chance(0.5)) {
        const status = rnd.pick(['open', 'won', 'lost'] as const);
        body.status = status;
        if (status === 'lost' && rnd.chance(0.7)) body.lost_reason = `Reason ${rnd.int(1000)}`;
      }
      if (rnd.chance(0.5)) body.amount = rnd.cents();
      if (rnd.chance(0.4)) body.currency = rnd.pick(CURRENCIES).toLowerCase();
      if (Object.keys(body).length === 0) body.amount = rnd.cents();
      return body;
    };
    const patches = Array.from({ length: 200 }, (_, i) => ({
      i,
      uuid: uuids[rnd.int(uuids.length)] as string,
      body: patchBody(),
    }));
    const patchCount = new Map<string, number>();
    for (const p of patches) patchCount.set(p.uuid, (patchCount.get(p.uuid) ?? 0) + 1);

    type Task = () => Promise<{ label: string; answer: Answer; want: number }>;
    const tasks: Task[] = [
      ...patches.map(
        (p): Task =>
          async () => ({
            label: `PATCH ${p.uuid} ${JSON.stringify(p.body)}`,
            want: 200,
            answer: await withRetries(
              () =>
                gateway.call('PATCH', `/api/deals/${p.uuid}`, {
                  key,
                  body: p.body,
                  headers: { 'Idempotency-Key': `patch-${p.i}` },
                }),
              firstStatuses,
            ),
          }),
      ),
      ...Array.from(
        { length: 50 },
        (_, j): Task =>
          async () => ({
            label: `POST ${JSON.stringify(dealBodies[20 + j])}`,
            want: 201,
            answer: await create(20 + j),
          }),
      ),
    ];
    for (let i = tasks.length - 1; i > 0; i--) {
      const j = rnd.int(i + 1);
      [tasks[i], tasks[j]] = [tasks[j] as Task, tasks[i] as Task];
    }
    const started = Date.now();
    const results = await inPool(IN_FLIGHT, tasks);
    const elapsed = Date.now() - started;
    const wrong = results
      .filter((r) => r.answer.status !== r.want)
      .map((r) => `${r.label}: ${r.answer.status} ${r.answer.text}`);
    expect(wrong, `seed ${seed}`).toEqual([]);
    for (const r of results) if (r.want === 201) uuids.push(r.answer.body.data.uuid);
    expect(new Set(uuids).size).toBe(70);

    const deals = await readDeals(gateway, key, uuids);
    const problems = [
      ...(await checkLists(gateway, key, deals, dealQueries(deals, pipelines, [...CURRENCIES]))),
      ...(await checkBoards(gateway, key, deals, pipelines)),
    ];
    // No PATCH applied twice: a deal's version is at most one more than the PATCHes it got.
    for (const d of deals)
      if (d.version > 1 + (patchCount.get(d.uuid) ?? 0))
        problems.push(`deal ${d.uuid}: version ${d.version} after ${patchCount.get(d.uuid) ?? 0} PATCHes`);
    // Each contact's open deals, as its answer counts them, against the deals.
    for (const email of emails) {
      const c = await gateway.call('GET', `/api/contacts?email=${encodeURIComponent(email)}`, { key });
      const open = deals.filter((d) => d.contact.email === email && d.status === 'open').length;
      if (c.body.data[0]?.open_deals_count !== open)
        problems.push(
          `contact ${email}: open_deals_count ${c.body.data[0]?.open_deals_count}, recount ${open}`,
        );
    }
    const busy = firstStatuses.filter((s) => s !== 200 && s !== 201).length;
    expect(problems, `seed ${seed}; ${busy} first answers retried; writes took ${elapsed} ms`).toEqual([]);
  }, 180_000);

  it('two PATCHes and a deal creation racing for one e-mail: one contact holds it, no deal points at a loser', async () => {
    const account = await createTestAccount({
      contacts: [
        { email: 'a@race.test', first_name: 'Ada', last_name: 'Racer' },
        { email: 'b@race.test', first_name: 'Ben', last_name: 'Racer' },
      ],
    });
    const key = account.apiKey;
    const [a, b] = account.contacts as { uuid: string; email: string }[];
    if (!a || !b) throw new Error('contacts missing');
    const dealUuids: string[] = [];
    for (const email of [a.email, b.email]) {
      const r = await gateway.call('POST', '/api/deals', {
        key,
        body: { name: 'Existing', contact_email: email },
      });
      expect(r.status, r.text).toBe(201);
      dealUuids.push(r.body.data.uuid);
    }
    const get = (path: string) => gateway.call('GET', path, { key });
    const problems: string[] = [];
    const outcomes: string[] = [];
    const statuses: number[] = [];
    for (let round = 0; round < 10; round++) {
      const email = `race${round}-${randomBytes(3).toString('hex')}@race.test`;
      const before = new Map<string, string>();
      for (const c of [a, b]) before.set(c.uuid, (await get(`/api/contacts/${c.uuid}`)).body.data.email);
      const patchTo = (uuid: string) => () =>
        withRetries(
          () =>
            gateway.call('PATCH', `/api/contacts/${uuid}`, {
              key,
              body: { email: round % 2 ? email.toUpperCase() : email },
            }),
          statuses,
        );
      const post = () =>
        withRetries(
          () =>
            gateway.call('POST', '/api/deals', {
              key,
              body: {
                name: `Race ${round}`,
                contact_email: round % 2 ? email : email.toUpperCase(),
                contact_first_name: 'Newcomer',
              },
              headers: { 'Idempotency-Key': `race-${round}` },
            }),
          statuses,
        );
      // Each racer in turn gets a head start of a few milliseconds, so each wins some rounds.
      const delayed = (k: number, send: () => Promise<Answer>) =>
        new Promise<void>((resolve) => setTimeout(resolve, ((k + round) % 3) * 4)).then(send);
      const [pa, pb, created] = await Promise.all([
        delayed(0, patchTo(a.uuid)),
        delayed(1, patchTo(b.uuid)),
        delayed(2, post),
      ]);
      const label = `round ${round} (${email})`;
      expect(created.status, `${label}: ${created.text}`).toBe(201);
      dealUuids.push(created.body.data.uuid);
      const winners: string[] = [];
      for (const [contact, answer] of [
        [a, pa],
        [b, pb],
      ] as const) {
        if (answer.status === 200) winners.push(contact.uuid);
        else if (answer.status !== 422 || Object.keys(answer.body.errors ?? {}).join() !== 'email')
          problems.push(`${label}: PATCH of ${contact.uuid} answered ${answer.status} ${answer.text}`);
        else if ((await get(`/api/contacts/${contact.uuid}`)).body.data.email !== before.get(contact.uuid))
          problems.push(`${label}: the losing PATCH of ${contact.uuid} changed its e-mail`);
      }
      const holders = await get(`/api/contacts?email=${encodeURIComponent(email)}`);
      if (holders.body.meta.total !== 1) {
        problems.push(`${label}: ${holders.body.meta.total} contacts hold the e-mail: ${holders.text}`);
        continue;
      }
      const holder = holders.body.data[0].uuid as string;
      const dealContact = (await get(`/api/deals/${created.body.data.uuid}`)).body.data.contact
        .uuid as string;
      const postWon = dealContact !== a.uuid && dealContact !== b.uuid;
      outcomes.push(postWon ? 'POST' : dealContact === a.uuid ? 'PATCH a' : 'PATCH b');
      if (postWon ? winners.length !== 0 : winners.length !== 1 || winners[0] !== dealContact)
        problems.push(
          `${label}: PATCH winners ${JSON.stringify(winners)}, the deal's contact ${dealContact}`,
        );
      if (holder !== dealContact)
        problems.push(`${label}: the e-mail is held by ${holder}, the created deal points at ${dealContact}`);
      // Every deal shows its contact with the e-mail the contact really has.
      for (const uuid of dealUuids) {
        const shown = (await get(`/api/deals/${uuid}`)).body.data.contact;
        const real = (await get(`/api/contacts/${shown.uuid}`)).body.data;
        if (real?.email !== shown.email)
          problems.push(
            `${label}: deal ${uuid} shows ${shown.email} for contact ${shown.uuid}, which has ${real?.email}`,
          );
      }
    }
    expect(problems, `winners: ${outcomes.join(', ')}`).toEqual([]);
  }, 120_000);
});
