import { afterEach, describe, expect, it } from 'vitest';
import { dynamo, queryAll, tableName } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';

/**
 * A create puts its search terms and its custom fields' and address's postings before its commit, marked with its
 * pending id, and its commit deletes its pending item (lib/data/index/pending.ts): a reader counts a marked item
 * once the pending item is gone, and checks it against its ticket while it is there. Here the create is held
 * between the two, its commit cancelled, or its commit timed out, and every read that meets its items is made.
 */
const gateway = useGateway();

/** The create's commit: the transaction that puts its ticket (its subject names the test). */
const createCommit = (tag: string) => (input: Record<string, unknown>) =>
  JSON.stringify(input).includes(`${tag} sighting`) && JSON.stringify(input).includes('"Put"');

/** Makes the first call of `command` that `needle` accepts fail with `error`, unsent. */
function failOnce(command: string, needle: (input: Record<string, unknown>) => boolean, error: Error) {
  let done = false;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input?: Record<string, unknown> }).input ?? {};
      if (!done && context.commandName === command && needle(input)) {
        done = true;
        throw error;
      }
      return next(args);
    },
    { step: 'initialize', name: 'failOnce' },
  );
}
afterEach(() => {
  dynamo.middlewareStack.remove('failOnce');
});

describe("a create's items put before its commit", () => {
  const account = useTestAccount();
  const call = () => keyedCaller(gateway, account.apiKey);

  /** Every way a reader finds a test's ticket: a word, its number, its custom field, its address, and both. */
  async function found(tag: string, number: number) {
    const total = async (query: string) => {
      const r = await call()('GET', `/api/tickets?${query}`);
      expect(r.status, r.text).toBe(200);
      return {
        total: r.body.meta.total as number,
        subjects: r.body.data.map((t: { subject: string }) => t.subject),
      };
    };
    return {
      word: await total(`search=${tag.slice(0, 4)}`),
      number: await total(`search=${number}`),
      field: await total(`custom_fields[zone]=${tag}`),
      address: await total(`requester_email=${tag}@park.test`),
      both: await total(`custom_fields[zone]=${tag}&status=open`),
    };
  }
  const none = { total: 0, subjects: [] };
  const one = (tag: string) => ({ total: 1, subjects: [`${tag} sighting`] });
  const everywhere = (tag: string) => ({
    word: one(tag),
    number: one(tag),
    field: one(tag),
    address: one(tag),
    both: one(tag),
  });
  const nowhere = { word: none, number: none, field: none, address: none, both: none };
  const body = (tag: string) => ({
    subject: `${tag} sighting`,
    description: 'd',
    requester_email: `${tag}@park.test`,
    custom_fields: { zone: tag },
  });

  const pendingItems = () =>
    queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': tickets.index.keys.pendingPartition(account.accountId) },
      ConsistentRead: true,
    });

  /** The next ticket's number: one more than the newest's (the tests run in order; none deletes a ticket). */
  async function nextNumber() {
    const r = await call()('GET', '/api/tickets?per_page=1');
    return Number(String(r.body.data[0]?.reference ?? 'TKT-0').replace(/\D/g, '')) + 1;
  }

  it('are in no list, total or search while it is held before its commit, and in all of them once it lands', async () => {
    const number = await nextNumber();
    let during: Awaited<ReturnType<typeof found>> | undefined;
    let pendingDuring = 0;
    beforeCallOnce('TransactWriteItemsCommand', createCommit('okapi'), async () => {
      pendingDuring = (await pendingItems()).length;
      during = await found('okapi', number);
    });
    const r = await call()('POST', '/api/tickets', body('okapi'));
    expect(r.status, r.text).toBe(201);
    expect(pendingDuring).toBe(1);
    expect(during).toEqual(nowhere);
    expect(await found('okapi', number)).toEqual(everywhere('okapi'));
    expect(await pendingItems()).toEqual([]);
  });

  it('are counted once when the create is decided again after DynamoDB cancelled its commit', async () => {
    const number = await nextNumber();
    // The ticket's own put refused (as for a lost race): the create decides again and writes everything in its
    // commit; the first attempt's marked items are deleted and its pending item left to expire.
    const cancelled = Object.assign(new Error('cancelled (injected)'), {
      name: 'TransactionCanceledException',
      CancellationReasons: [{ Code: 'None' }, { Code: 'ConditionalCheckFailed' }],
    });
    failOnce('TransactWriteItemsCommand', createCommit('zebra'), cancelled);
    const r = await call()('POST', '/api/tickets', body('zebra'));
    expect(r.status, r.text).toBe(201);
    expect(await found('zebra', number)).toEqual(everywhere('zebra'));
    const left = await pendingItems();
    expect(left).toHaveLength(1);
    expect(left[0]?.expires_at).toEqual(expect.any(Number));
  });

  it('are in no list, total or search after its commit timed out and never landed', async () => {
    const number = await nextNumber();
    const before = (await pendingItems()).length;
    failOnce(
      'TransactWriteItemsCommand',
      createCommit('hyena'),
      Object.assign(new Error('timed out (injected)'), { name: 'TimeoutError' }),
    );
    const r = await call()('POST', '/api/tickets', body('hyena'));
    expect(r.status, r.text).toBeGreaterThanOrEqual(500);
    // The commit may have landed, as far as the create knows: its items and its pending item are left, and every
    // reader checks them against the ticket, which is not there.
    expect(await pendingItems()).toHaveLength(before + 1);
    expect(await found('hyena', number)).toEqual(nowhere);
  });
});
