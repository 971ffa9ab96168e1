import { describe, expect, it } from 'vitest';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';

/**
 * A rule's backtest (decisions.md, "Business rules"; docs/rules.md, "Backtest"): over a window of the events feed,
 * the changes of the rule's kind and those it would have fired on, by the evaluator's own conditions, writing
 * nothing; read in parts that add up to the whole. The history below is made through the API, so what each rule
 * would have done is known here from the history itself.
 */
const gateway = useGateway();
const clock = useManualClock();
const MINUTE = 60_000;

type Call = ReturnType<typeof keyedCaller>;

async function rule(call: Call, body: Record<string, unknown>): Promise<number> {
  const made = await call('POST', '/api/rules', { actions: [{ type: 'add_tags', tags: ['x'] }], ...body });
  expect(made.status, made.text).toBe(201);
  return made.body.data.id as number;
}

async function backtest(call: Call, id: number, body: Record<string, unknown>) {
  const answer = await call('POST', `/api/rules/${id}/backtest`, body);
  expect(answer.status, answer.text).toBe(200);
  return answer.body.data as {
    changes: number;
    would_fire: number;
    tickets: string[];
    next_cursor: string | null;
  };
}

/**
 * Six tickets (two about an invoice), then: four made pending (one of them opened again 30 minutes on), two
 * requester messages and an agent note, all within two hours.
 */
async function history(call: Call) {
  const start = new Date(clock().nowMs()).toISOString();
  const uuids: string[] = [];
  for (const subject of ['Invoice wrong', 'Login', 'Invoice missing', 'Crash', 'Slow', 'Refund']) {
    const made = await call('POST', '/api/tickets', {
      subject,
      description: 'd',
      requester_email: 'r@x.example',
    });
    expect(made.status, made.text).toBe(201);
    uuids.push(made.body.ticket.uuid as string);
  }
  await clock().advance(MINUTE);
  for (const uuid of uuids.slice(0, 4)) {
    expect((await call('PATCH', `/api/tickets/${uuid}`, { status: 'pending' })).status).toBe(200);
  }
  await clock().advance(30 * MINUTE);
  expect((await call('PATCH', `/api/tickets/${uuids[3]}`, { status: 'open' })).status).toBe(200);
  const agent = (await call('GET', '/api/agents')).body.data[0].id as number;
  for (const [uuid, author] of [
    [uuids[4], 'requester'],
    [uuids[5], 'requester'],
    [uuids[5], 'agent'],
  ] as const) {
    const posted = await call('POST', `/api/tickets/${uuid}/messages`, {
      body: 'more',
      author,
      ...(author === 'agent' ? { visibility: 'internal', agent_id: agent } : {}),
    });
    expect(posted.status, posted.text).toBe(201);
    // A change is known in the feed by its ticket and its time: two changes of one ticket are never at one instant.
    await clock().advance(1_000);
  }
  await clock().advance(90 * MINUTE);
  return { start, uuids };
}

/** A rule of each of the three change kinds, counted against the history below. */
const BILLING = {
  name: 'Billing',
  on: 'created',
  conditions: { all: [{ field: 'subject', op: 'contains', value: 'invoice' }] },
};
const WENT_PENDING = {
  name: 'Went pending',
  on: 'updated',
  conditions: { all: [{ field: 'status', op: 'changed_to', value: 'pending' }] },
};
const CUSTOMER_WROTE = {
  name: 'Customer wrote',
  on: 'message',
  conditions: { all: [{ field: 'message.author', op: 'is', value: 'requester' }] },
};

describe('a rule backtest', () => {
  it('counts the changes of its kind and those it would have fired on, for every kind of rule', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const { start, uuids } = await history(call);
    const created = await rule(call, BILLING);
    const pending = await rule(call, WENT_PENDING);
    const customer = await rule(call, CUSTOMER_WROTE);
    const nudge = await rule(call, {
      name: 'Nudge',
      on: 'time',
      time: { after_minutes: 60, since: 'status_changed_at' },
      conditions: { all: [{ field: 'status', op: 'is', value: 'pending' }] },
    });
    const feedBefore = await readFeedToEnd(gateway.call, account.apiKey);

    expect(await backtest(call, created, { from: start })).toEqual({
      changes: 6,
      would_fire: 2,
      tickets: [uuids[0], uuids[2]],
      next_cursor: null,
    });
    // Five PATCHes; the messages' own ticket.updated are message changes, not updates.
    expect(await backtest(call, pending, { from: start })).toMatchObject({ changes: 5, would_fire: 4 });
    expect(await backtest(call, customer, { from: start })).toEqual({
      changes: 3,
      would_fire: 2,
      tickets: [uuids[4], uuids[5]],
      next_cursor: null,
    });
    // Three tickets stayed pending an hour; the fourth was opened again before its moment.
    const timed = await backtest(call, nudge, { from: start });
    expect(timed.would_fire).toBe(3);
    expect(timed.tickets).toEqual(uuids.slice(0, 3));

    // A window that ends before the PATCHes holds the creates only; one that starts after them, the messages.
    const creates = Date.parse(start) + 30_000;
    expect(await backtest(call, created, { from: start, to: new Date(creates).toISOString() })).toMatchObject(
      {
        changes: 6,
      },
    );
    expect(await backtest(call, pending, { from: start, to: new Date(creates).toISOString() })).toMatchObject(
      {
        changes: 0,
        would_fire: 0,
      },
    );
    const later = new Date(Date.parse(start) + 20 * MINUTE).toISOString();
    expect(await backtest(call, pending, { from: later })).toMatchObject({ changes: 1, would_fire: 0 });
    // The time rule's moments came after an hour: a window ending sooner sees none fire.
    const soon = new Date(Date.parse(start) + 45 * MINUTE).toISOString();
    expect(await backtest(call, nudge, { from: start, to: soon })).toMatchObject({ would_fire: 0 });

    // Nothing was written: no event, and no rule counted a firing.
    expect((await readFeedToEnd(gateway.call, account.apiKey)).events.length).toBe(feedBefore.events.length);
    for (const id of [created, pending, customer, nudge]) {
      const shown = await call('GET', `/api/rules/${id}`);
      expect(shown.body.data.fired).toEqual({ last_hour: 0, last_day: 0, last_week: 0 });
    }
  });

  it('counts what rules that ran for real counted: their firings are the backtest of their window', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const ids = [await rule(call, BILLING), await rule(call, WENT_PENDING), await rule(call, CUSTOMER_WROTE)];
    const { start } = await history(call);
    for (const id of ids) {
      const { fired } = (await call('GET', `/api/rules/${id}`)).body.data;
      expect(fired.last_day).toBeGreaterThan(0);
      expect((await backtest(call, id, { from: start })).would_fire).toBe(fired.last_day);
    }
  });

  it('reads a window in parts that add up to the whole, without overlap', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const start = new Date(clock().nowMs()).toISOString();
    const uuids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const made = await call('POST', '/api/tickets', {
        subject: `T${i}`,
        description: 'd',
        requester_email: 'r@x.example',
      });
      expect(made.status, made.text).toBe(201);
      uuids.push(made.body.ticket.uuid as string);
      await clock().advance(1_000);
    }
    for (const [i, uuid] of uuids.entries()) {
      const body = i % 3 === 0 ? { status: 'pending' } : { priority: 'high' };
      expect((await call('PATCH', `/api/tickets/${uuid}`, body)).status).toBe(200);
      await clock().advance(1_000);
    }
    const pending = await rule(call, WENT_PENDING);
    const whole = await backtest(call, pending, { from: start });
    expect(whole).toEqual({
      changes: 40,
      would_fire: 14,
      tickets: uuids.filter((_, i) => i % 3 === 0),
      next_cursor: null,
    });
    const parts: Awaited<ReturnType<typeof backtest>>[] = [];
    let after: string | null | undefined;
    do {
      const part = await backtest(call, pending, { from: start, limit: 48, ...(after ? { after } : {}) });
      parts.push(part);
      after = part.next_cursor;
    } while (after !== null && parts.length < 200);
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.reduce((n, p) => n + p.changes, 0)).toBe(40);
    expect(parts.reduce((n, p) => n + p.would_fire, 0)).toBe(14);
    expect(parts.flatMap((p) => p.tickets).sort()).toEqual([...whole.tickets].sort());
  });

  it('refuses a window past 30 days, an end before its start, a foreign cursor; an unknown rule is a 404', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const other = await createTestAccount({ agents: agentsFile(1) });
    const call = keyedCaller(gateway, account.apiKey);
    const id = await rule(call, { name: 'Any', on: 'created' });
    const now = clock().nowMs();
    const refused = async (body: unknown, field: string) => {
      const answer = await call('POST', `/api/rules/${id}/backtest`, body);
      expect(answer.status, answer.text).toBe(422);
      expect(Object.keys(answer.body.errors)).toEqual([field]);
    };
    await refused({}, 'from');
    await refused({ from: new Date(now - 31 * 86_400_000).toISOString() }, 'from');
    await refused({ from: '2026-02-30T00:00:00Z' }, 'from');
    await refused(
      { from: new Date(now - MINUTE).toISOString(), to: new Date(now - 2 * MINUTE).toISOString() },
      'to',
    );
    await refused({ from: new Date(now - MINUTE).toISOString(), after: 'EVT!' }, 'after');
    await refused({ from: new Date(now - MINUTE).toISOString(), limit: 15 }, 'limit');
    const from = new Date(now - MINUTE).toISOString();
    expect((await call('POST', `/api/rules/${id + 1000}/backtest`, { from })).status).toBe(404);
    const theirs = await keyedCaller(gateway, other.apiKey)('POST', `/api/rules/${id}/backtest`, { from });
    expect(theirs.status).toBe(404);
  });
});
