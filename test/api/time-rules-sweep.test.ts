import { describe, expect, it } from 'vitest';
import { ruleSweepLeft } from '#lib/data/rules/sweep-lanes.ts';
import { getTicketByUuid } from '#lib/data/tickets/tickets.ts';
import { RULE_SWEEP_DELAY_MS, RULE_SWEEP_STEP, ruleSweepLaneStep } from '#lib/rules/sweep.ts';
import { ruleSweepPass } from '#lib/rules/sweep-runner.ts';
import { ruleSweepSplit } from '#lib/rules/sweep-split.ts';
import { breachPass } from '#lib/tickets/breaches.ts';
import type { Ticket, TicketStatus } from '#lib/tickets/types.ts';
import { parseTimestamp } from '#lib/time.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { measureItemWrites } from '#test/support/item-sizes.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';

/**
 * The moments of tickets already there (decisions.md, "Business rules", `on: time`; docs/rules.md, "Moments of
 * tickets already there"): a rule write that touches an active time rule sweeps the account's not-closed tickets,
 * so a rule made today fires on tickets pending since yesterday without anyone touching them, a deleted one leaves
 * them no moment, a sweep stopped midway goes on from its place, and a change racing it keeps its own moment. The
 * sweep is split into lanes swept side by side: many lanes sweep every ticket once, a crash in one resumes.
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
/** A ticket commit of a lane of the account's sweep (its check on the lane), not the split (which puts the lanes). */
const laneCommit = (accountId: string) => (input: Record<string, unknown>) =>
  ((input.TransactItems ?? []) as { ConditionCheck?: { Key: { pk: string } } }[]).some((item) =>
    item.ConditionCheck?.Key.pk.startsWith(`RULE_SWEEP#${accountId}#`),
  );
/** The account's lane sweeping `status` (one, at these sizes). */
const laneOf = async (accountId: string, status: string) => {
  const lane = (await ruleSweepLeft(accountId)).lanes.find((l) => l.status === status);
  if (!lane) throw new Error(`no lane of ${status}`);
  return lane.slot;
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

/**
 * An account of `count` tickets seeded (test/support/ticket-seeder.ts) an hour apart up to an hour ago, in the
 * statuses `statusOf` gives, and a time rule of their creation + 200 hours written through the API: every not-closed
 * ticket's moment moves, to `dueOf`.
 */
async function seeded(count: number, statusOf: (i: number) => TicketStatus) {
  const account = await createTestAccount({ agents: agentsFile(1) });
  const call = keyedCaller(gateway, account.apiKey);
  const startUs = (clock().nowMs() - (count + 1) * HOUR) * 1000;
  const bodies = Array.from({ length: count }, (_, i) => ({
    subject: `Old ${i}`,
    description: 'd',
    requester_email: 'r@customer.example',
  }));
  const made = await seedTickets(account.accountId, bodies, {
    createdUs: (i) => startUs + i * HOUR * 1000,
    shape: (ticket) => ({ ...ticket, status: statusOf(ticket.number - 1) }),
  });
  const rule = nudge({ time: { after_minutes: 200 * 60, since: 'created_at' }, conditions: { all: [] } });
  expect((await call('POST', '/api/rules', rule)).status).toBe(201);
  const stored = async () =>
    Promise.all(
      made.map(async (t) => {
        const found = await getTicketByUuid(account.accountId, t.uuid);
        if (!found) throw new Error(`no ticket ${t.uuid}`);
        return found;
      }),
    );
  const dueOf = (t: Ticket) =>
    t.status === 'closed'
      ? null
      : Math.ceil((parseTimestamp(t.createdAt) / 1000 + 200 * HOUR) / MINUTE) * MINUTE;
  const moments = async () =>
    (await stored()).map(({ entity }) => (entity.ruleDueAt ? parseTimestamp(entity.ruleDueAt) / 1000 : null));
  return { account, made, stored, dueOf, moments };
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
    expect(await ruleSweepLeft(account.accountId)).toEqual({ lanes: [] });
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
    // The split: one lane a status at 30 tickets, written with the root's deletion in one transaction.
    const split = await withFault(undefined, () => ruleSweepSplit(account.accountId));
    expect(split.result).toBe('more');
    console.log(`sweep split: ${split.operations.length} calls (${split.operations.join(', ')})`);
    const left = await ruleSweepLeft(account.accountId);
    expect(left.root).toBeUndefined();
    expect(left.lanes.map((l) => [l.status, l.after, l.before])).toEqual(
      ['open', 'pending', 'in_progress', 'resolved'].map((status) => [status, null, null]),
    );
    const open = await laneOf(account.accountId, 'open');
    // The empty statuses' lanes done (each deleted at its first step): only the open tickets' is left.
    for (const lane of left.lanes.filter((l) => l.status !== 'open'))
      expect(await ruleSweepLaneStep(account.accountId, lane.slot)).toBe('done');
    // One step, then the run stops: the oldest page has its moments, the rest not yet.
    const steps: string[] = [];
    const writes = await measureItemWrites(async () => {
      const step = await withFault(undefined, () => ruleSweepLaneStep(account.accountId, open));
      expect(step.result).toBe('more');
      steps.push(...step.operations);
    }, [account.accountId]);
    // What docs/capacity.md counts: the page's moved tickets in one commit with one check of the lane (never a
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
    // The next step's tickets written, then its save (the lane's deletion: its last page) lost (the process died):
    // the step fails and is postponed.
    const crashed = await withFault({ operation: 'DeleteItem', mode: 'lost-request' }, () => ruleSweepPass());
    expect(crashed.result.failed).toBe(1);
    expect(await moved()).toEqual(uuids.map(() => true));
    const afterCrash = await versions();
    expect((await ruleSweepPass()).done).toBe(0);
    await clock().advance(5_000);
    await sweepAll();
    expect(await ruleSweepLeft(account.accountId)).toEqual({ lanes: [] });
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
    beforeCallOnce('TransactWriteItemsCommand', laneCommit(account.accountId), () =>
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

  it('a newer rule write replaces the sweep: a commit of the old one held past the new split is refused, the new one begins again', async () => {
    const { account, call, uuids, stored } = await setUp(2);
    await clock().advance(HOUR);
    const made = await call('POST', '/api/rules', nudge());
    expect(made.status, made.text).toBe(201);
    await clock().advance(RULE_SWEEP_DELAY_MS);
    // The old lane's first commit held (a process frozen mid-step) while the rule is changed to fire after 72
    // hours and the newer sweep is split: every slot written again, so the old lane's check fails.
    const path = `/api/rules/${made.body.data.id}`;
    const later = { time: { after_minutes: 72 * 60, since: 'status_changed_at' } };
    const versions = async () => Promise.all(uuids.map(async (u) => (await stored(u)).version));
    const before = await versions();
    let changed = 0;
    beforeCallOnce('TransactWriteItemsCommand', laneCommit(account.accountId), async () => {
      const answer = await call('PATCH', path, later);
      expect(answer.status, answer.text).toBe(200);
      await clock().advance(RULE_SWEEP_DELAY_MS);
      expect(await ruleSweepSplit(account.accountId)).toBe('more');
      changed++;
    });
    // The split, then the old lanes' steps.
    await ruleSweepPass();
    await ruleSweepPass();
    expect(changed).toBe(1);
    // The page's one commit was refused whole: no ticket has the old rule's moment, none was written.
    for (const uuid of uuids) expect((await stored(uuid)).entity.ruleDueAt ?? null).toBeNull();
    expect(await versions()).toEqual(before);
    await sweepAll();
    expect(await ruleSweepLeft(account.accountId)).toEqual({ lanes: [] });
    for (const uuid of uuids) {
      const { entity } = await stored(uuid);
      const since = parseTimestamp(entity.statusChangedAt as string) / 1000;
      expect(parseTimestamp(entity.ruleDueAt as string) / 1000).toBe(
        Math.ceil((since + 72 * HOUR) / MINUTE) * MINUTE,
      );
    }
    // Each written once, by the newer sweep.
    expect(await versions()).toEqual(before.map((v) => v + 1));
  });

  it('a newer rule write stops the old lanes at their next step, before its own sweep is due', async () => {
    const { account, call, uuids, stored } = await setUp(2);
    await clock().advance(HOUR);
    const made = await call('POST', '/api/rules', nudge());
    expect(made.status, made.text).toBe(201);
    await clock().advance(RULE_SWEEP_DELAY_MS);
    expect(await ruleSweepSplit(account.accountId)).toBe('more');
    const pending = await laneOf(account.accountId, 'pending');
    const path = `/api/rules/${made.body.data.id}`;
    expect(
      (await call('PATCH', path, { time: { after_minutes: 72 * 60, since: 'status_changed_at' } })).status,
    ).toBe(200);
    // The newer root is not due for 6 s; the old lanes read it at their step, write nothing and are gone.
    await sweepAll();
    for (const uuid of uuids) expect((await stored(uuid)).entity.ruleDueAt ?? null).toBeNull();
    const left = await ruleSweepLeft(account.accountId);
    expect(left.lanes).toEqual([]);
    expect(left.root).toMatchObject({ step: 0, after: null, rev: 0 });
    expect(await ruleSweepLaneStep(account.accountId, pending)).toBe('done');
    await clock().advance(RULE_SWEEP_DELAY_MS);
    await sweepAll();
    for (const uuid of uuids) expect((await stored(uuid)).entity.ruleDueAt).toEqual(expect.any(String));
  });

  it('lanes sweep every ticket of every not-closed status side by side, each written once', async () => {
    const statuses: TicketStatus[] = ['open', 'pending', 'in_progress', 'resolved', 'closed'];
    const { account, made, stored, dueOf, moments } = await seeded(
      150,
      (i) => statuses[i % 5] as TicketStatus,
    );
    const before = (await stored()).map((s) => s.version);
    await clock().advance(RULE_SWEEP_DELAY_MS);
    // 30 tickets a status at 10 a lane: 3 lanes each, ranges of equal time from its oldest to now, the last open.
    expect(await ruleSweepSplit(account.accountId, 10)).toBe('more');
    const { lanes } = await ruleSweepLeft(account.accountId);
    expect(lanes).toHaveLength(12);
    for (const status of statuses.slice(0, 4)) {
      const of = lanes.filter((l) => l.status === status);
      expect(of.map((l) => l.after === null)).toEqual([true, false, false]);
      expect(of.map((l) => l.before === null)).toEqual([false, false, true]);
      expect(of[1]?.after).toBe(of[0]?.before);
      expect(of[2]?.after).toBe(of[1]?.before);
    }
    // Every lane in one pass at once (each within its steps): all done.
    const pass = await ruleSweepPass();
    expect(pass).toMatchObject({ done: 12, failed: 0 });
    expect(await ruleSweepLeft(account.accountId)).toEqual({ lanes: [] });
    expect(await moments()).toEqual(made.map(dueOf));
    // Each not-closed ticket written once (no two lanes read one), a closed one never.
    expect((await stored()).map((s) => s.version)).toEqual(
      made.map((t, i) => (before[i] as number) + (t.status === 'closed' ? 0 : 1)),
    );
  });

  it('a crash midway in one lane: the others go on, it resumes from its place, nothing written twice', async () => {
    const { account, made, stored, dueOf, moments } = await seeded(120, () => 'open');
    const before = (await stored()).map((s) => s.version);
    await clock().advance(RULE_SWEEP_DELAY_MS);
    const options = { laneTickets: 40, stepsPerPass: 1 };
    await ruleSweepPass(options);
    const open = (await ruleSweepLeft(account.accountId)).lanes.filter((l) => l.status === 'open');
    expect(open).toHaveLength(3);
    // A step each; one lane's save lost after its commit (the process died): that step fails and is postponed.
    const crashed = await withFault({ operation: 'UpdateItem', mode: 'lost-request' }, () =>
      ruleSweepPass(options),
    );
    expect(crashed.result.failed).toBe(1);
    const places = (await ruleSweepLeft(account.accountId)).lanes.filter((l) => l.status === 'open');
    expect(places.filter((l) => l.rev === 0)).toHaveLength(1);
    while ((await ruleSweepPass(options)).more);
    expect((await ruleSweepLeft(account.accountId)).lanes).toHaveLength(1);
    await clock().advance(5_000);
    while ((await ruleSweepPass(options)).more);
    expect(await ruleSweepLeft(account.accountId)).toEqual({ lanes: [] });
    expect(await moments()).toEqual(made.map(dueOf));
    expect((await stored()).map((s) => s.version)).toEqual(before.map((v) => v + 1));
  });
});
