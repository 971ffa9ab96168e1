import { createHash } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { ticketKeys } from '#lib/data/keys.ts';
import { dynamo, tableName } from '#lib/data/store/client.ts';
import { ATTR } from '#lib/data/store/items.ts';
import { dimension } from '#lib/data/tickets/ticket-index.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Lists at the edges an adversarial run found (issue 13's review): a page of a dimension holding a marked
 * posting of a write that never committed; a long custom-field value and the text of its hash; search words
 * holding the key separator `#`.
 */
const gateway = useGateway();

async function seed(key: string, n: number, body: Record<string, unknown> = {}) {
  const uuids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await gateway.call('POST', '/api/tickets', {
      key,
      body: {
        subject: `Printer ${i}`,
        description: 'd',
        requester_email: 'o@overflow.test',
        priority: 'high',
        ...body,
      },
    });
    expect(r.status, r.text).toBe(201);
    uuids.push(r.body.ticket.uuid);
  }
  return uuids;
}

/**
 * A single-dimension page reads offset + limit postings, and again further when it drops marked postings of
 * writes that never committed. A drop counted twice once grew the read until the dimension ran out, and the
 * page then held every remaining ticket.
 */
describe('a page of a dimension that holds an orphan marked posting', () => {
  it('status=open&priority=high&per_page=2 holds at most 2 tickets (orphan put directly)', async () => {
    const { apiKey: key, accountId } = await createTestAccount();
    await seed(key, 6);
    const [x] = await seed(key, 1, { priority: 'low' }); // the newest; not in the queue
    // What an update that spilled its queue posting (marked) and then lost its commit leaves behind.
    const queue = dimension.queue('open', 'high', undefined);
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...ticketKeys.posting(accountId, queue, orderKeyOfUuid(x as string) as string),
          type: 'ticket_posting',
          [ATTR.unconfirmed]: 1,
        },
      }),
    );
    const r = await gateway.call('GET', '/api/tickets?status=open&priority=high&per_page=2', { key });
    expect(r.status, r.text).toBe(200);
    expect(r.body.meta.total).toBe(6);
    expect(r.body.data.length).toBe(2);
    expect(r.body.meta.to).toBe(2);
  });

  it('the same after a heavy PATCH whose commit was lost (503): status=pending&priority=high, per_page=1', async () => {
    const { apiKey: key } = await createTestAccount();
    const cf = (v: string) => Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, `${v}${i}`]));
    const pending = await seed(key, 5, { custom_fields: cf('a') });
    for (const u of pending) {
      const r = await gateway.call('PATCH', `/api/tickets/${u}`, { key, body: { status: 'pending' } });
      expect(r.status, r.text).toBe(200);
    }
    const [twin, heavy] = await seed(key, 2, { custom_fields: cf('a') });
    // A status change and 22 custom fields at once: the removals fill the commit, so the new queue posting
    // is put first, marked. The transaction never reaches the store (lost-request): the client gets 503.
    const body = {
      status: 'pending',
      custom_fields: Object.fromEntries(Array.from({ length: 22 }, (_, i) => [`k${i}`, 'b'])),
    };
    const dry = await withFault(undefined, () =>
      gateway.call('PATCH', `/api/tickets/${twin}`, { key, body }),
    );
    expect(dry.result.status, dry.result.text).toBe(200);
    expect(dry.operations.filter((op) => op === 'TransactWriteItems')).toHaveLength(1);
    // The commit by its operation, not its place: the rules cache's freshness check (a GetItem every 5 s of real
    // time) may come before it in one request and not the other.
    const failed = await withFault({ operation: 'TransactWriteItems', mode: 'lost-request' }, () =>
      gateway.call('PATCH', `/api/tickets/${heavy}`, { key, body }),
    );
    expect(failed.result.status, failed.result.text).toBe(503);
    // twin is now pending/high too: 6 tickets in the queue
    const r = await gateway.call('GET', '/api/tickets?status=pending&priority=high&per_page=1', { key });
    expect(r.status, r.text).toBe(200);
    expect(r.body.meta.total).toBe(6);
    expect(r.body.data.length).toBe(1);
  });
});

/**
 * A value over 512 bytes was once named in keys by its SHA-256; every value is now named by its keyed hash
 * (lib/data/index/keyed.ts): a value spelling another's unkeyed hash is still another value.
 */
describe('a long value and the text of its hash', () => {
  it('are different values to the filter', async () => {
    const { apiKey: key } = await createTestAccount();
    const long = `${'x'.repeat(600)}`;
    const named = `sha256:${createHash('sha256').update(long).digest('hex')}`;
    const subjects: Record<string, string> = {};
    for (const [subject, value] of [
      ['long', long],
      ['named', named],
    ] as const) {
      const r = await gateway.call('POST', '/api/tickets', {
        key,
        body: { subject, description: 'd', requester_email: 'h@hash.test', custom_fields: { ref: value } },
      });
      expect(r.status, r.text).toBe(201);
      subjects[subject] = r.body.ticket.uuid;
    }
    const list = async (q: string) => {
      const r = await gateway.call('GET', `/api/tickets?${q}`, { key });
      expect(r.status, r.text).toBe(200);
      return { total: r.body.meta.total, subjects: r.body.data.map((t: { subject: string }) => t.subject) };
    };
    const answers = {
      long: await list(`custom_fields[ref]=${long}`),
      named: await list(`custom_fields[ref]=${named}`),
      'named + status (blocks)': await list(`custom_fields[ref]=${named}&status=open`),
      'named + email (blocks)': await list(`custom_fields[ref]=${named}&requester_email=h%40hash.test`),
    };
    expect(answers).toEqual({
      long: { total: 1, subjects: ['long'] },
      named: { total: 1, subjects: ['named'] },
      'named + status (blocks)': { total: 1, subjects: ['named'] },
      'named + email (blocks)': { total: 1, subjects: ['named'] },
    });
  });
});

/**
 * Words are prefixes of terms stored as `p#<keyed term>#<order key>` (lib/data/index/keyed.ts; the terms were once
 * stored as written, where `p#plan#` began the key of the term `plan`); `plan#` is a prefix of no term `plan`.
 */
describe('search words holding the key separator', () => {
  it('"plan#0" matches no ticket whose words are "plan" and "c" alone', async () => {
    const { apiKey: key } = await createTestAccount();
    const created: Record<string, string> = {};
    for (const subject of ['Plan', 'Plan C', 'Plan cat', 'about C#']) {
      const r = await gateway.call('POST', '/api/tickets', {
        key,
        body: { subject, description: 'd', requester_email: 'x@sep.test', custom_fields: { tier: 'gold' } },
      });
      expect(r.status, r.text).toBe(201);
      created[subject] = r.body.ticket.uuid;
    }
    const found = async (search: string, extra = '') => {
      const r = await gateway.call('GET', `/api/tickets?search=${encodeURIComponent(search)}${extra}`, {
        key,
      });
      expect(r.status, r.text).toBe(200);
      return {
        total: r.body.meta.total,
        subjects: r.body.data.map((t: { subject: string }) => t.subject).sort(),
      };
    };
    // No ticket has a term starting with "plan#" / "c#" (subject words are split at '#', and edge '#' stripped).
    const answers = {
      'plan#': await found('plan#'),
      'plan#0': await found('plan#0'),
      'c#': await found('c#'),
      'plan#0 + filters': await found('plan#0', '&custom_fields[tier]=gold&status=open'),
    };
    expect(answers).toEqual({
      'plan#': { total: 0, subjects: [] },
      'plan#0': { total: 0, subjects: [] },
      'c#': { total: 0, subjects: [] },
      'plan#0 + filters': { total: 0, subjects: [] },
    });
  });
});
