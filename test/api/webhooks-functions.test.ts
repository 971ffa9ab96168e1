import type { Context } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { handler as dueHandler } from '#functions/webhooks-due.ts';
import { handler as streamHandler } from '#functions/webhooks-stream.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { duePending, getDelivery } from '#lib/data/webhook-deliveries.ts';
import { attemptTimeoutMs } from '#lib/webhooks/deliver.ts';
import { lambdaContext } from '#test/support/events.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { inserted, modified, storedEventItem, streamBatch } from '#test/support/stream-records.ts';
import { accountWithTicketEvent, type Receiver } from '#test/support/webhooks.ts';

/**
 * The deployed dispatcher's two functions called as Lambda calls them: the stream function with an event source
 * mapping's batch (its DynamoDB calls checked against its grants after the file, test/support/table-actions.ts),
 * the due function as the schedule invokes it. Receivers on this machine: the local stage's URL policy.
 */
process.env[STAGE_VARIABLE] = LOCAL_STAGE;
const gateway = useGateway();
const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
afterAll(() => {
  delete process.env[STAGE_VARIABLE];
});

const setUp = () => accountWithTicketEvent(gateway, receivers);

describe('webhooks-stream function', () => {
  it('fans a batch out: a pending delivery for the new event, nothing for a ticket or a MODIFY record, nothing new for the batch again', async () => {
    const { account, endpoint, event } = await setUp();
    const item = await storedEventItem(account.accountId, event.id);
    const ticket = inserted({ ...item, pk: `TICKETS#${account.accountId}`, type: 'ticket' }, '100');
    const eventChanged = modified(item, '101');
    const pendingIds = async () =>
      (await duePending(account.accountId, endpoint.id, Date.now() + 60_000, 10)).map((p) => p.eventId);
    // The other records alone: handled, and nothing to deliver.
    expect(await streamHandler(streamBatch(ticket, eventChanged), lambdaContext)).toEqual({
      batchItemFailures: [],
    });
    expect(await getDelivery(account.accountId, endpoint.id, event.id)).toBeUndefined();
    expect(await pendingIds()).toEqual([]);

    const batch = streamBatch(ticket, eventChanged, inserted(item, '102'));
    expect(await streamHandler(batch, lambdaContext)).toEqual({ batchItemFailures: [] });
    const delivery = await getDelivery(account.accountId, endpoint.id, event.id);
    expect(delivery).toMatchObject({
      state: 'pending',
      attempts: 0,
      eventType: 'ticket.created',
    });
    expect(await pendingIds()).toEqual([event.id]);
    // The same batch again (Lambda's retry after a timeout): nothing new.
    expect(await streamHandler(batch, lambdaContext)).toEqual({ batchItemFailures: [] });
    expect(await getDelivery(account.accountId, endpoint.id, event.id)).toEqual(delivery);
    expect(await pendingIds()).toEqual([event.id]);
  });

  it('reports the records whose fan-out failed, and fans them out once when handed over again', async () => {
    const { account, endpoint, event } = await setUp();
    const batch = streamBatch(inserted(await storedEventItem(account.accountId, event.id), '200'));
    // The first call to the store (the account's endpoints) is lost.
    const failed = await withFault({ at: 1, mode: 'lost-request' }, () =>
      streamHandler(batch, lambdaContext),
    );
    expect(failed.result).toEqual({ batchItemFailures: [{ itemIdentifier: '200' }] });
    expect(await getDelivery(account.accountId, endpoint.id, event.id)).toBeUndefined();
    expect(await streamHandler(batch, lambdaContext)).toEqual({ batchItemFailures: [] });
    expect(await getDelivery(account.accountId, endpoint.id, event.id)).toMatchObject({ state: 'pending' });
    expect(
      (await duePending(account.accountId, endpoint.id, Date.now() + 60_000, 10)).map((p) => p.eventId),
    ).toEqual([event.id]);
  });
});

describe('webhooks-due function', () => {
  it('sends what is due within a 1.5 s run, verified, and records the attempt: succeeded, 1 attempt, 204', async () => {
    const { account, hook, endpoint, event } = await setUp();
    await streamHandler(
      streamBatch(inserted(await storedEventItem(account.accountId, event.id), '300')),
      lambdaContext,
    );
    // Time left for a 1.5 s run: the function keeps an attempt's limit and 5 s for the end.
    const context = {
      ...lambdaContext,
      getRemainingTimeInMillis: () => attemptTimeoutMs() + 5000 + 1500,
    } as Context;
    await dueHandler({}, context);
    expect(hook.deliveries.map((d) => [d.webhookId, d.verified])).toEqual([[event.id, true]]);
    expect(await getDelivery(account.accountId, endpoint.id, event.id)).toMatchObject({
      state: 'succeeded',
      attempts: 1,
      lastStatus: 204,
    });
  });
});
