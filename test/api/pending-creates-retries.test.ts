import { afterEach, describe, expect, it } from 'vitest';
import { dynamo } from '#lib/data/store/client.ts';
import { agentsFile, createTestAccount, useTestAccount } from '#test/support/accounts.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import {
  clearHolds,
  commitOf,
  failNext,
  hold,
  listAll,
  markedItems,
  markedPuts,
  pendingBlockAdd,
  pendingItems,
} from '#test/support/pending-holds.ts';

/**
 * Creates whose pending item is spent by a first attempt (a least-busy pick lost, its rules deciding
 * other values on the retry), whose marked puts fail or come back partly unprocessed, whose commit lands but whose
 * answer is lost, each retried with its Idempotency-Key. Lists, totals and search must agree with GET.
 */
const gateway = useGateway();
afterEach(() => {
  clearHolds();
  dynamo.middlewareStack.remove('advUnprocessed');
});

const numberOf = (t: { reference: string }) => Number(t.reference.replace(/\D/g, ''));
const deletes = (input: Record<string, unknown>) =>
  JSON.stringify(input).includes('DeleteRequest') && !JSON.stringify(input).includes('PutRequest');

describe('least-busy create that loses its pick, its rules writing other values on the retry', () => {
  async function setUp() {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'least_busy' },
      agents: agentsFile(2),
    });
    const call = keyedCaller(gateway, account.apiKey);
    const [one, two] = account.agents.map((a) => a.id);
    for (const [agent, lane] of [
      [one, 'lane-one'],
      [two, 'lane-two'],
    ] as const) {
      const r = await call('POST', '/api/rules', {
        name: `lane ${lane}`,
        on: 'created',
        conditions: { all: [{ field: 'assignee_id', op: 'is', value: agent }] },
        actions: [{ type: 'set', field: 'custom_fields.lane', value: lane }],
      });
      expect(r.status, r.text).toBe(201);
    }
    return { account, call };
  }
  const body = (who: string) => ({
    subject: `okapi ${who}`,
    description: 'd',
    requester_email: `${who}@zoo.test`,
    custom_fields: { who: `held-${who}` },
  });

  for (const deleteFails of [false, true]) {
    it(`each ticket in its own lane only${deleteFails ? ' (the abandoned items not deleted)' : ''}`, async () => {
      const { account, call } = await setUp();
      const held = hold('TransactWriteItemsCommand', commitOf('held-a'));
      const failedDelete = deleteFails ? failNext('BatchWriteItemCommand', deletes, 'throttle') : undefined;
      const postA = call('POST', '/api/tickets', body('a'));
      await held.reached;
      // B picks the same agent and lands first: A's pick is lost, A decides again (the other agent, the other lane).
      const b = await call('POST', '/api/tickets', body('b'));
      expect(b.status, b.text).toBe(201);
      held.release('pass');
      const a = await postA;
      expect(a.status, a.text).toBe(201);
      expect(a.body.ticket.assignee.id).not.toBe(b.body.ticket.assignee.id);
      if (failedDelete) {
        expect(failedDelete.wasReached(), "the abandoned items' deletion was failed").toBe(true);
      }
      const laneOf = (t: { custom_fields: Record<string, string> }) => t.custom_fields.lane;
      expect(laneOf(a.body.ticket)).not.toBe(laneOf(b.body.ticket));

      for (const [t, other] of [
        [a.body.ticket, b.body.ticket],
        [b.body.ticket, a.body.ticket],
      ]) {
        for (const q of [
          `custom_fields[lane]=${laneOf(t)}`,
          `custom_fields[lane]=${laneOf(t)}&status=open`,
          `custom_fields[lane]=${laneOf(t)}&assignee_id=${t.assignee.id}`,
          `search=${numberOf(t)}`,
          `requester_email=${t.requester.email}`,
        ]) {
          const got = await listAll(call, q);
          expect({ q, ...got }).toEqual({ q, total: 1, uuids: [t.uuid], listed: 1 });
        }
        expect(other.uuid).not.toBe(t.uuid);
      }
      const all = await listAll(call, 'search=okapi');
      expect(all.total).toBe(2);
      expect(all.listed).toBe(2);
      // A's first attempt's pending item: spent, left (to expire, or for good when its items stayed).
      const left = await pendingItems(account.accountId);
      expect(left).toHaveLength(1);
      if (!deleteFails) expect(left[0]?.expires_at).toEqual(expect.any(Number));
      // No item stays marked with a pending id that is gone (a reader would trust it).
      const pendingIds = new Set(left.map((p) => p.sk));
      const orphans = (await markedItems(account.accountId)).filter((i) => pendingIds.has(i.u as string));
      if (!deleteFails) expect(orphans).toEqual([]);
    });
  }
});

describe('marked puts that fail, and commits whose answer is lost', () => {
  const account = useTestAccount();
  const call = () => keyedCaller(gateway, account.apiKey);
  const body = (tag: string) => ({
    subject: `${tag} sighting`,
    description: 'd',
    requester_email: `${tag}@park.test`,
    custom_fields: { zone: tag },
  });
  const shapes = (tag: string) => [
    `search=${tag}`,
    `custom_fields[zone]=${tag}`,
    `custom_fields[zone]=${tag}&status=open`,
    `requester_email=${tag}@park.test`,
    `requester_email=${tag}@park.test&custom_fields[zone]=${tag}`,
  ];
  async function expectOnly(tag: string, uuids: string[]) {
    for (const q of shapes(tag)) {
      const got = await listAll(call(), q);
      expect({ q, ...got }).toEqual({
        q,
        total: uuids.length,
        uuids: [...uuids].sort(),
        listed: uuids.length,
      });
    }
  }

  /**
   * A create whose first `command` matching `needle` is throttled: it fails and nothing is found; its retry with
   * the same Idempotency-Key is found once. Answers the retry.
   */
  async function throttledThenRetried(
    command: string,
    needle: (input: Record<string, unknown>) => boolean,
    tag: string,
    key: string,
  ) {
    failNext(command, needle, 'throttle');
    const first = await call()('POST', '/api/tickets', body(tag), { 'Idempotency-Key': key });
    expect(first.status, first.text).toBeGreaterThanOrEqual(500);
    await expectOnly(tag, []);
    const again = await call()('POST', '/api/tickets', body(tag), { 'Idempotency-Key': key });
    expect(again.status, again.text).toBe(201);
    await expectOnly(tag, [again.body.ticket.uuid]);
    return again;
  }

  it('part of the marked puts come back unprocessed: asked again, the ticket is found everywhere', async () => {
    let done = false;
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const input = (args as { input: { RequestItems: Record<string, unknown[]> } }).input;
        if (done || context.commandName !== 'BatchWriteItemCommand' || !markedPuts(input)) return next(args);
        done = true;
        const [table, requests] = Object.entries(input.RequestItems)[0] as [string, unknown[]];
        const half = Math.ceil(requests.length / 2);
        const result = (await next({
          ...args,
          input: { ...input, RequestItems: { [table]: requests.slice(0, half) } },
        } as never)) as { output: Record<string, unknown> };
        return {
          ...result,
          output: { ...result.output, UnprocessedItems: { [table]: requests.slice(half) } },
        } as never;
      },
      { step: 'initialize', name: 'advUnprocessed', priority: 'low' },
    );
    const r = await call()('POST', '/api/tickets', body('bongo'));
    expect(r.status, r.text).toBe(201);
    expect(done).toBe(true);
    await expectOnly('bongo', [r.body.ticket.uuid]);
    const n = await listAll(call(), `search=${numberOf(r.body.ticket)}`);
    expect(n.uuids).toEqual([r.body.ticket.uuid]);
  });

  it("a block key refused while an update's commit holds its block: sent again, the ticket is found everywhere", async () => {
    const pendingBefore = (await pendingItems(account.accountId)).length;
    const refused = failNext('UpdateItemCommand', pendingBlockAdd, 'conflict');
    const r = await call()('POST', '/api/tickets', body('quokka'));
    expect(r.status, r.text).toBe(201);
    expect(refused.wasReached()).toBe(true);
    // Only that update was sent again: the create was not decided again, so its commit deleted its pending item.
    expect(await pendingItems(account.accountId)).toHaveLength(pendingBefore);
    await expectOnly('quokka', [r.body.ticket.uuid]);
  });

  it('a block key throttled: the create fails, nothing is found; its retry (same key) is found once', async () => {
    await throttledThenRetried('UpdateItemCommand', pendingBlockAdd, 'numbat', 'adv-block-throttled-1');
  });

  it('marked puts throttled: the create fails, nothing is found; its retry (same key) is found once', async () => {
    const again = await throttledThenRetried('BatchWriteItemCommand', markedPuts, 'tapir', 'adv-throttled-1');
    const lostNumber = numberOf(again.body.ticket) - 1;
    expect((await listAll(call(), `search=${lostNumber}`)).total).toBe(0);
  });

  it("commit lands, its answer is lost: the ticket GET finds is found by every read, and the key's retry adds none", async () => {
    const key = 'adv-lost-answer-1';
    failNext('TransactWriteItemsCommand', commitOf('gecko sighting'), 'timeout-landed');
    const first = await call()('POST', '/api/tickets', body('gecko'), { 'Idempotency-Key': key });
    expect(first.status, first.text).toBeGreaterThanOrEqual(500);
    const listed = await call()('GET', '/api/tickets?per_page=1');
    const newest = listed.body.data[0] as { uuid: string; subject: string; reference: string };
    expect(newest.subject).toBe('gecko sighting');
    expect((await call()('GET', `/api/tickets/${newest.uuid}`)).status).toBe(200);
    await expectOnly('gecko', [newest.uuid]);
    expect((await listAll(call(), `search=${numberOf(newest)}`)).uuids).toEqual([newest.uuid]);
    const again = await call()('POST', '/api/tickets', body('gecko'), { 'Idempotency-Key': key });
    expect([200, 201, 409, 422]).toContain(again.status);
    const all = await listAll(call(), 'search=gecko');
    for (const u of all.uuids) expect((await call()('GET', `/api/tickets/${u}`)).status).toBe(200);
    expect(all.listed).toBe(all.total);
  });
});
