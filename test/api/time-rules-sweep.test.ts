import { describe, expect, it } from 'vitest';
import { getRuleSweep } from '#lib/data/rules/sweeps.ts';
import { getTicketByUuid } from '#lib/data/tickets/tickets.ts';
import { RULE_SWEEP_DELAY_MS, RULE_SWEEP_STEP, ruleSweepStep } from '#lib/rules/sweep.ts';
import { ruleSweepPass } from '#lib/rules/sweep-runner.ts';
import { breachPass } from '#lib/tickets/breaches.ts';
import { parseTimestamp } from '#lib/time.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { measureItemWrites } from '#test/support/item-sizes.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';

/**
 * The moments of tickets already there (decisions.md, "Business rules", `on: time`; docs/rules.md, "Moments of
 * tickets already there"): a rule write that touches an active time rule sweeps the account's not-closed tickets,
 * so a rule made today fires on tickets pending since yesterday without anyone touching them, a deleted one leaves
 * them no moment, a sweep stopped midway goes on from its place, and a change racing it keeps its own moment.
 */
const gateway = useGateway();
const clock = useManualClock();
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Every due entry of the file's table (its tests' tickets: each test looks at its own). */
const pass = () => breachPass({ limit: 100_000 });
const sweepAll = async () => {
  let passes = 0;
  while ((await ruleSweepPass()).more) passes++;
  return passes;
};

const nudge = (extra: Record<string, unknown> = {}) => ({
  name: 'Nudge',
  on: 'time',
  time: { after_minutes: 48 * 60, since: 'status_changed_at' },
  conditions: { all: [{ field: 'status', op: 'is', value: 'pending' }] },
  actions: [{ type: 'add_tags', tags: ['nudged'] }],
  ...extra,
});

async function setUp(count: number, status: 'pending' | 'open' = 'pending') {
  const account = await createTestAccount({ agents: agentsFile(1) });
  const call = keyedCaller(gateway, account.apiKey);
  const uuids: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = { subject: `Waiting ${i}`, description: 'd', requester_email: 'r@customer.example' };
    const created = await call('POST', '/api/tickets', body);
    expect(created.status, created.text).toBe(201);
    if (status === 'pending') {
      const moved = await call('PATCH', `/api/tickets/${created.body.ticket.uuid}`, { status });
      expect(moved.status, moved.text).toBe(200);
    }
    uuids.push(created.body.ticket.uuid as string);
  }
  const stored = async (uuid: string) => {
    const found = await getTicketByUuid(account.accountId, uuid);
    if (!found) throw new Error(`no ticket ${uuid}`);
    return found;
  };
  return { account, call, uuids, stored };
}

describe('the moment sweep', () => {
  it('gives tickets pending before a time rule was made their moment; the rule fires on them; a deletion clears them', async () => {
    const { account, call, uuids, stored } = await setUp(3);
    // Pending since "yesterday": the rule made a day later.
    await clock().advance(24 * HOUR);
    const made = await call('POST', '/api/rules', nudge());
    expect(made.status, made.text).toBe(201);
    // A rule whose moment on them has passed already (30 minutes after their status change): only moments after
    // a rule was made count.
    const late = await call(
      'POST',
      '/api/rules',
      nudge({ name: 'Too late', time: { after_minutes: 30, since: 'status_changed_at' } }),
    );
    expect(late.status, late.text).toBe(201);
    expect((await stored(uuids[0] as string)).entity.ruleDueAt ?? null).toBeNull();
    // Not due before the rules cache's freshness has passed.
    expect((await ruleSweepPass()).done).toBe(0);
    await clock().advance(RULE_SWEEP_DELAY_MS);
    await sweepAll();
    expect(await getRuleSweep(account.accountId)).toBeUndefined();
    // Their status change + 48 hours, rounded up to the whole minute.
    const since = parseTimestamp((await stored(uuids[0] as string)).entity.statusChangedAt as string) / 1000;
    for (const uuid of uuids) {
      const due = parseTimestamp((await stored(uuid)).entity.ruleDueAt as string) / 1000;
      expect(due).toBe(Math.ceil((since + 48 * HOUR) / MINUTE) * MINUTE);
    }
    // Not before the moment; at it, once on each.
    await clock().advance(23 * HOUR);
    await pass();
    for (const uuid of uuids) expect((await stored(uuid)).entity.tags).toEqual([]);
    await clock().advance(HOUR + 2 * MINUTE);
    await Promise.all([pass(), pass()]);
    for (const uuid of uuids) expect((await stored(uuid)).entity.tags).toEqual(['nudged']);

    // A new cycle for one, then the rules deleted: the sweep takes its moment away; nothing happens at it.
    const [first] = uuids as [string];
    await call('PATCH', `/api/tickets/${first}`, { status: 'open' });
    await call('PATCH', `/api/tickets/${first}`, { status: 'pending', tags: [] });
    expect((await stored(first)).entity.ruleDueAt).not.toBeNull();
    for (const rule of [made, late]) {
      expect((await call('DELETE', `/api/rules/${rule.body.data.id}`)).status).toBe(200);
    }
    await clock().advance(RULE_SWEEP_DELAY_MS);
    await sweepAll();
    const after = await stored(first);
    expect(after.entity.ruleDueAt ?? null).toBeNull();
    await clock().advance(49 * HOUR);
    await pass();
    expect(await stored(first)).toEqual(after);
  });

  it('a sweep stopped midway goes on from its place, and a crash before its save writes nothing twice', async () => {
    const count = RULE_SWEEP_STEP + 5;
    const { account, call, uuids, stored } = await setUp(count, 'open');
    const rule = nudge({ time: { after_minutes: 60, since: 'created_at' }, conditions: { all: [] } });
    expect((await call('POST', '/api/rules', rule)).status).toBe(201);
    await clock().advance(RULE_SWEEP_DELAY_MS);
    // One step, then the run stops: the oldest page has its moments, the rest not yet.
    const steps: string[] = [];
    const writes = await measureItemWrites(async () => {
      const step = await withFault(undefined, () => ruleSweepStep(account.accountId));
      expect(step.result).toBe('more');
      steps.push(...step.operations);
    }, [account.accountId]);
    // What docs/capacity.md counts: the page's moved tickets in one commit with one check of the sweep (never a
    // check a ticket at once: on DynamoDB they would conflict with each other), the step's reads and its save.
    expect(steps.filter((operation) => operation === 'TransactWriteItems')).toHaveLength(1);
    const units = writes.reduce((n, w) => n + w.writeUnits, 0);
    const shapes = [...new Set(writes.map((w) => `${w.operation} ${w.shape}`))].sort();
    console.log(
      `sweep step of ${RULE_SWEEP_STEP}: ${steps.length} calls (${[...new Set(steps)].join(', ')}), ${writes.length} items written, ${units} WU; ${shapes.join('; ')}`,
    );
    const moved = async () => Promise.all(uuids.map(async (u) => (await stored(u)).entity.ruleDueAt != null));
    expect(await moved()).toEqual(uuids.map((_, i) => i < RULE_SWEEP_STEP));
    const versions = async () => Promise.all(uuids.map(async (u) => (await stored(u)).version));
    const afterStep = await versions();
    // The next step's tickets written, then its save lost (the process died): the step fails and is postponed.
    const crashed = await withFault({ operation: 'UpdateItem', mode: 'lost-request' }, () => ruleSweepPass());
    expect(crashed.result.failed).toBe(1);
    expect(await moved()).toEqual(uuids.map(() => true));
    const afterCrash = await versions();
    await clock().advance(5_000);
    await sweepAll();
    expect(await getRuleSweep(account.accountId)).toBeUndefined();
    // The page read again wrote nothing: each ticket's moment written once.
    expect(await versions()).toEqual(afterCrash);
    expect(afterCrash.slice(0, RULE_SWEEP_STEP)).toEqual(afterStep.slice(0, RULE_SWEEP_STEP));
    expect(afterCrash.slice(RULE_SWEEP_STEP)).toEqual(afterStep.slice(RULE_SWEEP_STEP).map((v) => v + 1));
  });

  it('a change racing the sweep keeps what it wrote: the sweep reads it again, and writes no older moment', async () => {
    const { account, call, uuids, stored } = await setUp(2);
    const [raced, other] = uuids as [string, string];
    await clock().advance(HOUR);
    expect((await call('POST', '/api/rules', nudge())).status).toBe(201);
    await clock().advance(RULE_SWEEP_DELAY_MS);
    // The sweep read both tickets pending; the requester's answer on one (open: no moment) lands before the page's
    // commit, which is refused whole: each is written again alone, read again.
    beforeCallOnce('TransactWriteItemsCommand', `RULE_SWEEP#${account.accountId}`, () =>
      call('PATCH', `/api/tickets/${raced}`, { status: 'open' }),
    );
    await sweepAll();
    const after = await stored(raced);
    expect(after.entity.status).toBe('open');
    expect(after.entity.ruleDueAt ?? null).toBeNull();
    expect((await stored(other)).entity.ruleDueAt).toEqual(expect.any(String));
    await clock().advance(48 * HOUR);
    await pass();
    expect(await stored(raced)).toEqual(after);
    expect((await stored(other)).entity.tags).toEqual(['nudged']);
  });

  it('a newer rule write replaces the sweep: the old one writes nothing more, the new one begins again', async () => {
    const { account, call, uuids, stored } = await setUp(2);
    await clock().advance(HOUR);
    const made = await call('POST', '/api/rules', nudge());
    expect(made.status, made.text).toBe(201);
    await clock().advance(RULE_SWEEP_DELAY_MS);
    // Before the old sweep's first ticket write, the rule is changed to fire after 72 hours.
    const path = `/api/rules/${made.body.data.id}`;
    const later = { time: { after_minutes: 72 * 60, since: 'status_changed_at' } };
    let changed = 0;
    beforeCallOnce('TransactWriteItemsCommand', `RULE_SWEEP#${account.accountId}`, async () => {
      const answer = await call('PATCH', path, later);
      expect(answer.status, answer.text).toBe(200);
      changed++;
    });
    await sweepAll();
    expect(changed).toBe(1);
    // The old sweep stopped at its commit, refused (not its sweep any more); the new one is not due yet.
    expect(await getRuleSweep(account.accountId)).toMatchObject({ step: 0, after: null, rev: 0 });
    // The page's one commit was refused whole: no ticket has the old rule's moment.
    for (const uuid of uuids) expect((await stored(uuid)).entity.ruleDueAt ?? null).toBeNull();
    await clock().advance(RULE_SWEEP_DELAY_MS);
    await sweepAll();
    for (const uuid of uuids) {
      const { entity } = await stored(uuid);
      const since = parseTimestamp(entity.statusChangedAt as string) / 1000;
      expect(parseTimestamp(entity.ruleDueAt as string) / 1000).toBe(
        Math.ceil((since + 72 * HOUR) / MINUTE) * MINUTE,
      );
    }
  });
});
