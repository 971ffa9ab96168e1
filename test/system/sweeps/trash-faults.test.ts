import { describe, expect, it } from 'vitest';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { type FaultMode, sweepPositions, withFault } from '#test/support/faults.ts';
import { type Gateway, useGateway } from '#test/support/http.ts';
import { endClaim } from '#test/support/idempotency.ts';
import { indexSnapshot, trashItemsOf } from '#test/support/index-snapshot.ts';
import { ticketBody } from '#test/support/tickets.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * A delete and a restore under faults and races (decisions.md, "Deleting, restoring and erasing"). Every store
 * call of each failed in turn (the ways a call fails taken in turn), for a ticket, a deal and a contact alike: the first
 * answer is 200, 409 (the key's claim) or 503, the indexes any reader sees (lists, totals, board sums, open_deals_count)
 * are at every point either all of the object or none of it (the snapshot before or after, nothing between), and the
 * retry with the same Idempotency-Key completes it. Deletes racing updates, messages and restores of the same
 * ticket leave it either live with its whole index or in the trash with none of it, never both or half.
 */
const gateway = useGateway();
const MODES: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];

type Call = (
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
) => ReturnType<Gateway['call']>;

/**
 * What the faults run over, one declaration per type that can be deleted (decisions.md, "Deleting, restoring and
 * erasing"): how to make a live one, where it is named, and the indexes its delete and restore change (a deal's also
 * moves its contact's open_deals_count, so the contacts' index is watched too).
 */
interface Deletable {
  type: 'ticket' | 'deal' | 'contact';
  path: string;
  indexes: readonly ('TICKET' | 'DEAL' | 'CONTACT')[];
  /** The account file's extra parts this type needs. */
  account?: Record<string, unknown>;
  create(call: Call, n: string, account: TestAccount): Promise<string>;
}

const created = (r: { status: number; text: string }) => {
  expect(r.status, r.text).toBe(201);
};

const DELETABLES: Deletable[] = [
  {
    type: 'ticket',
    path: '/api/tickets',
    indexes: ['TICKET'],
    account: { agents: [{ email: 'ana@faults.test', name: 'Ana' }] },
    async create(call, n, account) {
      const agent = account.agents[0]?.id as number;
      const r = await call(
        'POST',
        '/api/tickets',
        {},
        ticketBody({ subject: `Faulty ${n}`, assignee_id: agent }),
      );
      created(r);
      return r.body.ticket.uuid as string;
    },
  },
  {
    // Every deal of one known contact: each delete and restore moves its open_deals_count and the board's sums.
    type: 'deal',
    path: '/api/deals',
    indexes: ['DEAL', 'CONTACT'],
    account: { contacts: [{ email: 'kim@faults.test', first_name: 'Kim', last_name: 'Known' }] },
    async create(call, n) {
      const r = await call(
        'POST',
        '/api/deals',
        {},
        { name: `Faulty ${n}`, amount: '12.34', contact_email: 'kim@faults.test' },
      );
      created(r);
      return r.body.data.uuid as string;
    },
  },
  {
    // A contact made by a deal, whose deal is then deleted (a contact with a live deal cannot be): deletable. One
    // address for all (a contact in the trash frees it): every round's contact is in the same dimensions, so the
    // snapshot reads the same partitions each round instead of more and more.
    type: 'contact',
    path: '/api/contacts',
    // Its deal is in the trash before the contact's delete: the deals' index does not move with it.
    indexes: ['CONTACT'],
    async create(call, n) {
      const r = await call(
        'POST',
        '/api/deals',
        {},
        { name: `For ${n}`, contact_email: 'cora@faults.test', contact_first_name: 'Cora' },
      );
      created(r);
      expect((await call('DELETE', `/api/deals/${r.body.data.uuid}`, {})).status).toBe(200);
      return r.body.data.contact.uuid as string;
    },
  },
];

describe.each(DELETABLES)('delete and restore of a $type, every store call failed in turn', (kind) => {
  it(`a ${kind.type} is all in or all out of the index at every point, and the keyed retry completes`, {
    timeout: 240_000,
  }, async () => {
    /**
     * An account whose first object of the type was deleted, restored and deleted again (as the calls below are
     * counted): its index snapshot is every round's "out", each round's object in the trash.
     */
    const setUp = async () => {
      const account = await createTestAccount(kind.account ?? {});
      const key = account.apiKey;
      const call: Call = (method, path, headers, body) =>
        gateway.call(method, path, { key, headers, ...(body === undefined ? {} : { body }) });
      const snap = async () =>
        Object.fromEntries(
          await Promise.all(kind.indexes.map(async (i) => [i, await indexSnapshot(i, account.accountId)])),
        );
      const probe = await kind.create(call, 'probe', account);
      const counted = {
        delete: (await withFault(undefined, () => call('DELETE', `${kind.path}/${probe}`, {}))).operations,
        restore: (await withFault(undefined, () => call('POST', `/api/trash/${probe}/restore`, {}, {})))
          .operations,
      };
      expect((await call('DELETE', `${kind.path}/${probe}`, {})).status).toBe(200);
      return { account, call, snap, counted, out: await snap() };
    };

    // The calls of one delete and one restore, counted without a fault.
    const { counted } = await setUp();
    expect(counted.delete).toContain('TransactWriteItems');
    expect(counted.restore).toContain('TransactWriteItems');

    const runs = (['delete', 'restore'] as const).flatMap((what) => {
      const calls = counted[what];
      // Tickets: every call. Deals and contacts run the same engine's delete and restore (lib/data/index/trash.ts),
      // call for call: for them the commit and the calls around it, where their own indexes (a deal's board sums,
      // a contact's open_deals_count) are written, and the first and last call.
      const commit = calls.indexOf('TransactWriteItems') + 1;
      return Array.from({ length: calls.length }, (_, i) => i + 1)
        .filter(
          (at) => kind.type === 'ticket' || at === 1 || at === calls.length || Math.abs(at - commit) <= 1,
        )
        .map((at) => ({ what, calls, at }));
    });
    // A few positions at once, each on an account of its own set up as the counting one was.
    await sweepPositions(runs, async ({ what, calls, at }) => {
      const { account, call, snap, out } = await setUp();
      // Each call in turn, the three ways a call fails taken in turn too (every way on every call tripled the
      // suite's time and found nothing the rotation does not: test/system/sweeps/faults-update.test.ts has the matrix).
      for (const mode of [MODES[(at - 1) % MODES.length] as FaultMode]) {
        const label = `${kind.type} ${what}, call ${at} (${calls[at - 1]}) ${mode}`;
        const uuid = await kind.create(call, `${what}-${at}-${mode}`, account);
        const live = await snap();
        if (what === 'restore') {
          expect((await call('DELETE', `${kind.path}/${uuid}`, {})).status).toBe(200);
        }
        const headers = { 'Idempotency-Key': `${what}-${at}-${mode}-${uuid}` };
        const send = () =>
          what === 'delete'
            ? call('DELETE', `${kind.path}/${uuid}`, headers)
            : call('POST', `/api/trash/${uuid}/restore`, headers, {});
        const { result: first } = await withFault({ at, mode }, send);
        // 409: a conflict on the key's claim reads as the key still running (decisions.md, "Safe retries").
        expect([200, 409, 503], `${label}: ${first.text}`).toContain(first.status);
        const between = await snap();
        expect([out, live], label).toContainEqual(between);
        const retried = await waitFor(
          async () => {
            const answer = await send();
            // The faulted request is gone: its claim's lease is ended instead of waited out (10 s).
            if (answer.status === 409) await endClaim(account.accountId, headers['Idempotency-Key']);
            return answer.status === 409 ? undefined : answer;
          },
          { timeout: 15_000, interval: 300, label: `${label}: the key's claim to end` },
        );
        expect(retried.status, `${label}: ${retried.text}`).toBe(200);
        if (first.status === 200) expect(retried.body, label).toEqual(first.body);
        const after = await snap();
        const inTrash = (await trashItemsOf(account.accountId)).some((i) => i.uuid === uuid);
        const shown = await call('GET', `${kind.path}/${uuid}`, {});
        if (what === 'delete') {
          expect(after, label).toEqual(out);
          expect([inTrash, shown.status], label).toEqual([true, 404]);
        } else {
          // Restored: the index is back as it was before the deletion; the trash item is gone.
          expect(after, label).toEqual(live);
          expect([inTrash, shown.status], label).toEqual([false, 200]);
          expect((await call('DELETE', `${kind.path}/${uuid}`, {})).status, label).toBe(200);
          expect(await snap(), label).toEqual(out);
        }
      }
    });
  });
});

describe('deletes racing changes of the same ticket', () => {
  it('with a PATCH, a message or a restore: all in or all out, the counts exact', async () => {
    const account = await createTestAccount({ agents: [{ email: 'ana@race.test', name: 'Ana' }] });
    const agent = account.agents[0]?.id as number;
    const key = account.apiKey;
    const call = (method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key, ...(body === undefined ? {} : { body }) });
    const before = await indexSnapshot('TICKET', account.accountId);
    const rivals: [string, (uuid: string) => Promise<{ status: number }>][] = [
      ['patch', (uuid) => call('PATCH', `/api/tickets/${uuid}`, { priority: 'urgent', status: 'pending' })],
      [
        'message',
        (uuid) =>
          call('POST', `/api/tickets/${uuid}/messages`, {
            body: 'hi',
            visibility: 'public',
            agent_id: agent,
          }),
      ],
      ['restore', (uuid) => call('POST', `/api/trash/${uuid}/restore`, {})],
      ['delete', (uuid) => call('DELETE', `/api/tickets/${uuid}`)],
    ];
    for (const [name, rival] of rivals) {
      for (let round = 0; round < 3; round++) {
        const created = await call('POST', '/api/tickets', ticketBody({ subject: `Race ${name} ${round}` }));
        const uuid = created.body.ticket.uuid as string;
        // The restore races a deletion of a ticket already deleted once and restored (so it may find it either way).
        if (name === 'restore') {
          expect((await call('DELETE', `/api/tickets/${uuid}`)).status).toBe(200);
          expect((await call('POST', `/api/trash/${uuid}/restore`, {})).status).toBe(200);
        }
        const [deleted, other] = await Promise.all([call('DELETE', `/api/tickets/${uuid}`), rival(uuid)]);
        expect([200, 404], `${name}: delete`).toContain(deleted.status);
        expect([200, 201, 404], `${name}: ${JSON.stringify(other)}`).toContain(other.status);
        const inTrash = (await trashItemsOf(account.accountId)).some((i) => i.uuid === uuid);
        const live = (await call('GET', `/api/tickets/${uuid}`)).status === 200;
        expect(inTrash !== live, `${name}: in the trash xor live`).toBe(true);
        // Out again, whatever won: the index is as it was before this ticket, exactly.
        if (live) expect((await call('DELETE', `/api/tickets/${uuid}`)).status).toBe(200);
        expect(await indexSnapshot('TICKET', account.accountId), `${name} round ${round}`).toEqual(before);
      }
    }
  });
});
