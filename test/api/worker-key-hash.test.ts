import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler as breachHandler } from '#functions/sla-breaches.ts';
import { handler as purgeHandler } from '#functions/trash-purge.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { keyHashHolders, keyHashUsers } from '#test/support/table-actions.ts';

/**
 * The scheduled workers that rewrite or purge tickets name their index keys by the account's keyed hash (a custom
 * field's value, the requester's address: docs/data-model.md, "Keyed values in keys"), so deployed they need the
 * key-hash secret (functions/workers.ts, keyHashSecret): run through their handlers here, so that
 * test/support/table-actions-setup.ts fails the file if their declarations lack it. The handlers work every
 * account of their table, and only this file's ticket is due on the file's own table.
 */
const gateway = useGateway();
const clock = useManualClock();

const MIN_MS = 60_000;
const DAY_MS = 24 * 60 * MIN_MS;
/** A handler's context with `ms` left beyond the margin the handler keeps (10 s breaches, 30 s the purge). */
const contextLeft = (ms: number) =>
  ({ getRemainingTimeInMillis: () => ms, awsRequestId: 'worker' }) as Context;

describe('the scheduled workers and the key-hash secret', () => {
  it('breach and purge a ticket with keyed index keys, each declared with the secret', async () => {
    const account = await createTestAccount({
      sla_policies: [{ name: 'Standard', first_reply_minutes: 1, resolution_minutes: 5 }],
    });
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await gateway.call(method, path, { key: account.apiKey, ...(body ? { body } : {}) });
      expect(r.status, r.text).toBeLessThan(300);
      return r.body;
    };
    const created = await call('POST', '/api/tickets', {
      subject: 'Printer on fire',
      description: 'Help',
      requester_email: 'kim@client.test',
      custom_fields: { plan: 'gold' },
    });
    const uuid = created.ticket.uuid as string;
    keyHashUsers.clear();

    // Ten minutes on: its first reply is overdue, and one run of the breach function (1.5 s) writes the breach.
    await clock().advance(10 * MIN_MS);
    const run = breachHandler(undefined, contextLeft(10_000 + 1_500));
    await clock().advance(1_500);
    await run;
    const breached = await call('GET', `/api/tickets?sla=breached&custom_fields[plan]=gold`);
    expect(breached.data.map((t: { uuid: string }) => t.uuid)).toEqual([uuid]);

    // Deleted, then 31 days on: one run of the purge function purges it for good.
    await call('DELETE', `/api/tickets/${uuid}`);
    await clock().advance(31 * DAY_MS);
    await purgeHandler(undefined, contextLeft(30_000 + 5_000));
    const restore = await gateway.call('POST', `/api/trash/${uuid}/restore`, {
      key: account.apiKey,
      body: {},
    });
    expect(restore.status).toBe(404);

    expect([...keyHashUsers]).toEqual(expect.arrayContaining(['slaBreaches', 'trashPurge']));
    expect(['slaBreaches', 'trashPurge'].filter((name) => !keyHashHolders.has(name))).toEqual([]);
  });
});
