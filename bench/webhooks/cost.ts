import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { placeOfEventId } from '#lib/data/events.ts';
import { eventKeys, webhookDeliveryKeys, webhookKeys } from '#lib/data/keys.ts';
import { itemBytes, type RequestFigures } from '#test/support/dynamo-figures.ts';
import { log } from '../lib/measure.ts';
import { round } from '../lib/stats.ts';
import type { CallTally } from '../lib/store-calls.ts';
import { sleep, type WebhookRig } from './rig.ts';

/**
 * The dispatcher's store cost: every DynamoDB call it made in a window, named by what it is for
 * (bench/lib/store-calls.ts), with its items and write units, per delivery; in the throughput runs checked against
 * test/support/dynamo-figures.ts's figuresOf over the same window; its calls a second when idle; and the sizes of
 * its items as stored.
 */

export interface PurposeRow extends CallTally {
  purpose: string;
}

export interface CostOf {
  /** Deliveries the window's calls are divided by. */
  deliveries: number;
  seconds: number;
  /** The dispatcher's calls, by purpose, over the whole window. */
  byPurpose: PurposeRow[];
  /** Their sum. */
  total: CallTally;
  /**
   * figuresOf (test/support/dynamo-figures.ts) over the same window (throughput runs: every call of the process
   * in it is the dispatcher's), and whether it agrees with the tallies; its items written leave out DeleteItem.
   */
  figures?: Pick<RequestFigures, 'itemsRead' | 'itemsWritten' | 'writeUnits'> & {
    calls: number;
    agrees: boolean;
  };
}

/** The window's tallies as a cost: the dispatcher's calls by purpose (most first), and their sum. */
export function costOf(
  tallies: Map<string, Map<string, CallTally>>,
  deliveries: number,
  seconds: number,
): CostOf {
  const mine = tallies.get('dispatcher') ?? new Map<string, CallTally>();
  const byPurpose = [...mine]
    .map(([purpose, t]) => ({ purpose, ...t, readUnits: round(t.readUnits), ms: round(t.ms) }))
    .sort((a, b) => b.calls - a.calls);
  const total = byPurpose.reduce(
    (sum, t) => ({
      calls: sum.calls + t.calls,
      itemsWritten: sum.itemsWritten + t.itemsWritten,
      writeUnits: sum.writeUnits + t.writeUnits,
      indexWriteUnits: sum.indexWriteUnits + t.indexWriteUnits,
      itemsRead: sum.itemsRead + t.itemsRead,
      readUnits: round(sum.readUnits + t.readUnits),
      ms: round(sum.ms + t.ms),
    }),
    { calls: 0, itemsWritten: 0, writeUnits: 0, indexWriteUnits: 0, itemsRead: 0, readUnits: 0, ms: 0 },
  );
  return { deliveries, seconds: round(seconds, 2), byPurpose, total };
}

export function printCost(cost: CostOf) {
  const per = (n: number) => round(n / cost.deliveries, 3);
  log(
    `  the dispatcher's store calls per delivery (${cost.deliveries} deliveries): ${per(cost.total.calls)} calls, ${per(cost.total.itemsWritten)} items written, ${per(cost.total.writeUnits)} write units (+${per(cost.total.indexWriteUnits)} due index, est.), ${per(cost.total.itemsRead)} items read, ${per(cost.total.readUnits)} read units`,
  );
  for (const p of cost.byPurpose)
    log(
      `    ${p.purpose.padEnd(48)} ${String(p.calls).padStart(6)} calls ${String(per(p.calls)).padStart(6)}/delivery  written ${per(p.itemsWritten)}  WU ${per(p.writeUnits)}+${per(p.indexWriteUnits)}  read ${per(p.itemsRead)}  RU ${per(p.readUnits)}  mean ${round(p.ms / p.calls, 1)} ms`,
    );
  const f = cost.figures;
  if (f)
    log(
      `    figuresOf over the same window: ${f.calls} calls, ${f.itemsWritten} items written (DeleteItem not counted), ${f.writeUnits} write units, ${f.itemsRead} items read: ${f.agrees ? 'agrees' : 'DISAGREES'} with the tallies`,
    );
}

/** figuresOf over the window, and whether it agrees with the tallies (its items written leave out DeleteItem). */
export function checkedAgainst(
  cost: CostOf,
  figures: Pick<RequestFigures, 'itemsRead' | 'itemsWritten' | 'writeUnits'> & { operations: string[][] },
): NonNullable<CostOf['figures']> {
  const deletes = cost.byPurpose
    .filter((p) => p.purpose.startsWith('DeleteItem'))
    .reduce((n, p) => n + p.calls, 0);
  const fig = {
    calls: figures.operations.flat().length,
    itemsRead: figures.itemsRead,
    itemsWritten: figures.itemsWritten,
    writeUnits: figures.writeUnits,
  };
  return {
    ...fig,
    agrees:
      fig.calls === cost.total.calls &&
      fig.itemsRead === cost.total.itemsRead &&
      fig.writeUnits === cost.total.writeUnits &&
      fig.itemsWritten === cost.total.itemsWritten - deletes,
  };
}

/** The dispatcher with nothing to deliver for `seconds`: its calls a second, by purpose. */
export async function idleCost(
  rig: WebhookRig,
  seconds: number,
): Promise<{ seconds: number; byPurpose: PurposeRow[] }> {
  rig.calls.start();
  await sleep(seconds * 1000);
  const idleCalls = rig.calls.stop().get('dispatcher') ?? new Map<string, CallTally>();
  const per = (n: number) => round(n / seconds);
  const idle = {
    seconds,
    byPurpose: [...idleCalls].map(([purpose, t]) => ({
      purpose,
      calls: per(t.calls),
      itemsWritten: per(t.itemsWritten),
      writeUnits: per(t.writeUnits),
      indexWriteUnits: per(t.indexWriteUnits),
      itemsRead: per(t.itemsRead),
      readUnits: per(t.readUnits),
      ms: round(t.ms / Math.max(1, t.calls)),
    })),
  };
  log(
    `webhooks: idle for ${seconds} s, calls a second: ${idle.byPurpose.map((p) => `${p.purpose} ${p.calls}`).join(', ') || 'none'}`,
  );
  return idle;
}

/** One of each of the dispatcher's items as stored after the runs, by its size (bytes as DynamoDB counts them). */
export async function sampleItems(
  rig: WebhookRig,
  accountId: string,
  endpointId: string,
): Promise<Record<string, number>> {
  const { own: client, tableName } = rig;
  const first = async (pk: string) =>
    (
      await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          Limit: 1,
          ConsistentRead: true,
        }),
      )
    ).Items?.[0];
  const { Item: endpoint } = await client.send(
    new GetCommand({
      TableName: tableName,
      Key: webhookKeys.endpoint(accountId, endpointId),
      ConsistentRead: true,
    }),
  );
  const delivery = await first(webhookDeliveryKeys.delivery(accountId, endpointId, '').pk);
  const attempt = await first(webhookDeliveryKeys.attemptsPartition(accountId, endpointId));
  const event = delivery
    ? (
        await client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk AND sk = :sk',
            ExpressionAttributeValues: eventPlaceValues(accountId, String(delivery.eventId)),
            ConsistentRead: true,
          }),
        )
      ).Items?.[0]
    : undefined;
  // Pending items are gone once delivered: one as the fan-out writes it (lib/data/webhook-deliveries.ts).
  const now = Date.now();
  const pending = {
    ...webhookDeliveryKeys.pending(accountId, endpointId, now, String(delivery?.eventId ?? '')),
    type: 'webhook_pending',
    eventId: delivery?.eventId,
    eventType: delivery?.eventType,
    expires_at: Math.floor(now / 1000) + 30 * 24 * 60 * 60,
  };
  const sizes: Record<string, number> = {};
  for (const [name, item] of Object.entries({ endpoint, delivery, pending, attempt, event }))
    if (item) sizes[name] = itemBytes(item);
  return sizes;
}

/** The key of the event item an event id names (its place, in its shard's partition). */
function eventPlaceValues(accountId: string, eventId: string) {
  const { pk, sk } = eventKeys.place(accountId, placeOfEventId(eventId) ?? 0);
  return { ':pk': pk, ':sk': sk };
}
