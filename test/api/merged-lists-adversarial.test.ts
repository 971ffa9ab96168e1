import { afterEach, describe, expect, it } from 'vitest';
import { dynamo } from '#lib/data/store/client.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';

/**
 * A ticket status's list is the merge of its status × priority queue's partitions (and a priority's, of its
 * statuses'), read by parallel Queries (lib/data/index/order-key-reads.ts, queryPostings). A ticket that stays in
 * the list while its other part moves (an open ticket whose priority moves) must be listed exactly once, as it was
 * when `status#open` kept its own posting, which such a move never touched. Here the move lands between the
 * sources' reads (one source's Query held until the others have answered and the PATCH is done): the old
 * partition read before it, the new one after. Each list is then read again (lib/data/index/merged-reads.ts), so
 * the ticket is found once either way.
 */
const gateway = useGateway();

/** The list's Query of one source's postings (or of the dimension's own, as a release before the merge read it). */
const queryOf = (accountId: string, dims: string[]) => (input: Record<string, unknown>) => {
  const values = input.ExpressionAttributeValues as Record<string, unknown> | undefined;
  return dims.some((d) =>
    [`TICKET_INDEX#${accountId}#${d}`, `TICKET_SORTED#${accountId}#due#${d}`].includes(
      String(values?.[':pk']),
    ),
  );
};

/** Resolves once `n` Queries that `needle` accepts have been answered (the other sources' reads). */
function answered(n: number, needle: (input: Record<string, unknown>) => boolean): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        const input = (args as { input?: Record<string, unknown> }).input ?? {};
        if (context.commandName === 'QueryCommand' && needle(input) && ++seen === n) resolve();
        return result;
      },
      { step: 'initialize', name: 'answeredQueries' },
    );
  });
}
afterEach(() => {
  dynamo.middlewareStack.remove('answeredQueries');
});

describe('a merged list read while one of its tickets moves between its sources', () => {
  const account = useTestAccount();

  /**
   * Four tickets, the third (`moving`) created with `fields`; `query` is listed while `move` lands in its read of
   * `held`, once the list's reads of `others` have been answered.
   */
  async function race(
    fields: Record<string, string>,
    held: string[],
    others: string[],
    move: Record<string, string>,
    query: string,
  ) {
    const call = keyedCaller(gateway, account.apiKey);
    const made: string[] = [];
    for (const f of [{}, { priority: 'medium' }, fields, { priority: 'high' }]) {
      const r = await call('POST', '/api/tickets', {
        subject: 'race',
        description: 'd',
        requester_email: 'r@race.test',
        ...f,
      });
      expect(r.status, r.text).toBe(201);
      made.push(r.body.ticket.uuid);
    }
    const moving = made[2] as string;
    let moved = 0;
    const othersRead = answered(others.length, queryOf(account.accountId, others));
    beforeCallOnce('QueryCommand', queryOf(account.accountId, held), async () => {
      // The other sources' Queries, sent at once beside this one, are answered first.
      await othersRead;
      const r = await call('PATCH', `/api/tickets/${moving}`, move);
      expect(r.status, r.text).toBe(200);
      moved++;
    });
    const listed = await call('GET', `/api/tickets?${query}&per_page=100`);
    expect(listed.status, listed.text).toBe(200);
    expect(moved).toBe(1);
    const uuids: string[] = listed.body.data.map((t: { uuid: string }) => t.uuid);
    return { moving, uuids, total: listed.body.meta.total };
  }

  it('status=open: a ticket moved from low to urgent is listed once, not twice', async () => {
    const { moving, uuids, total } = await race(
      { priority: 'low' },
      ['queue#s=open#p=urgent', 'status#open'],
      ['queue#s=open#p=low', 'queue#s=open#p=medium', 'queue#s=open#p=high'],
      { priority: 'urgent' },
      'status=open',
    );
    expect(uuids.filter((u) => u === moving)).toHaveLength(1);
    expect(uuids).toHaveLength(total);
  });

  it('status=open: a ticket moved from urgent to low is listed, not left out', async () => {
    const { moving, uuids, total } = await race(
      { priority: 'urgent' },
      ['queue#s=open#p=urgent', 'status#open'],
      ['queue#s=open#p=low', 'queue#s=open#p=medium', 'queue#s=open#p=high'],
      { priority: 'low' },
      'status=open',
    );
    expect(uuids).toContain(moving);
    expect(uuids).toHaveLength(total);
  });

  it('status=open&sort=due: a ticket moved from urgent to low is listed, not left out', async () => {
    const { moving, uuids, total } = await race(
      { priority: 'urgent' },
      ['queue#s=open#p=urgent'],
      ['queue#s=open#p=low', 'queue#s=open#p=medium', 'queue#s=open#p=high'],
      { priority: 'low' },
      'status=open&sort=due',
    );
    expect(uuids).toContain(moving);
    expect(uuids).toHaveLength(total);
  });

  it('priority=high: a ticket moved from open to closed is listed once, not twice', async () => {
    const { moving, uuids, total } = await race(
      { priority: 'high', status: 'open' },
      ['queue#s=closed#p=high', 'priority#high'],
      ['open', 'pending', 'in_progress', 'resolved'].map((st) => `queue#s=${st}#p=high`),
      { status: 'closed' },
      'priority=high',
    );
    expect(uuids.filter((u) => u === moving)).toHaveLength(1);
    expect(uuids).toHaveLength(total);
  });
});
