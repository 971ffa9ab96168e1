import { marshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { handler as dueHandler } from '#functions/webhooks-due.ts';
import { handler as streamHandler } from '#functions/webhooks-stream.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { getItem } from '#lib/data/client.ts';
import { placeOfEventId } from '#lib/data/events.ts';
import { eventKeys } from '#lib/data/keys.ts';
import { getDelivery } from '#lib/data/webhook-deliveries.ts';
import { attemptTimeoutMs } from '#lib/webhooks/deliver.ts';
import { onlyAccountsForTests } from '#lib/webhooks/due.ts';
import { lambdaContext } from '#test/support/events.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
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
  onlyAccountsForTests();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
afterAll(() => {
  delete process.env[STAGE_VARIABLE];
});

const setUp = () => accountWithTicketEvent(gateway, receivers);

/** A stream record of an item as Lambda hands it over: its image in DynamoDB JSON, binary values in base64. */
function streamRecord(
  item: Record<string, unknown>,
  eventName: 'INSERT' | 'MODIFY',
  sequence: string,
): DynamoDBRecord {
  const image = JSON.parse(
    JSON.stringify(marshall(item), (_key, value) =>
      value instanceof Uint8Array || value?.type === 'Buffer'
        ? Buffer.from(value.data ?? value).toString('base64')
        : value,
    ),
  );
  return {
    eventID: sequence,
    eventName,
    eventSource: 'aws:dynamodb',
    dynamodb: {
      Keys: { pk: { S: String(item.pk) }, sk: { S: String(item.sk) } },
      NewImage: image,
      SequenceNumber: sequence,
      StreamViewType: 'NEW_IMAGE',
    },
  };
}

async function eventItem(accountId: string, eventId: string) {
  const item = await getItem(eventKeys.place(accountId, placeOfEventId(eventId) ?? 0));
  if (!item) throw new Error('no event item');
  return item;
}

describe('webhooks-stream function', () => {
  it('fans a batch out: a pending delivery for the new event, nothing for other records, no failures', async () => {
    const { account, endpoint, event } = await setUp();
    const item = await eventItem(account.accountId, event.id);
    const batch: DynamoDBStreamEvent = {
      Records: [
        streamRecord({ ...item, pk: `TICKETS#${account.accountId}`, type: 'ticket' }, 'INSERT', '100'),
        streamRecord(item, 'MODIFY', '101'),
        streamRecord(item, 'INSERT', '102'),
      ],
    };
    expect(await streamHandler(batch, lambdaContext)).toEqual({ batchItemFailures: [] });
    expect(await getDelivery(account.accountId, endpoint.id, event.id)).toMatchObject({
      state: 'pending',
      attempts: 0,
      eventType: 'ticket.created',
    });
    // The same batch again (Lambda's retry after a timeout): nothing new.
    expect(await streamHandler(batch, lambdaContext)).toEqual({ batchItemFailures: [] });
  });

  it('reports the records whose fan-out failed, and fans them out once when handed over again', async () => {
    const { account, endpoint, event } = await setUp();
    const batch: DynamoDBStreamEvent = {
      Records: [streamRecord(await eventItem(account.accountId, event.id), 'INSERT', '200')],
    };
    // The first call to the store (the account's endpoints) is lost.
    const failed = await withFault({ at: 1, mode: 'lost-request' }, () =>
      streamHandler(batch, lambdaContext),
    );
    expect(failed.result).toEqual({ batchItemFailures: [{ itemIdentifier: '200' }] });
    expect(await getDelivery(account.accountId, endpoint.id, event.id)).toBeUndefined();
    expect(await streamHandler(batch, lambdaContext)).toEqual({ batchItemFailures: [] });
    expect(await getDelivery(account.accountId, endpoint.id, event.id)).toMatchObject({ state: 'pending' });
  });
});

describe('webhooks-due function', () => {
  it('attempts what is due within its run, and ends with its attempts recorded', async () => {
    const { account, hook, endpoint, event } = await setUp();
    await streamHandler(
      { Records: [streamRecord(await eventItem(account.accountId, event.id), 'INSERT', '300')] },
      lambdaContext,
    );
    onlyAccountsForTests((accountId) => accountId === account.accountId);
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
