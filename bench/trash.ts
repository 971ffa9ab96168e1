import { duePurges, purgeOne } from '#lib/data/trash/purge.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import { postMessage } from '#lib/tickets/messages/post.ts';
import { deleteObject } from '#lib/trash/delete.ts';
import { restoreObject } from '#lib/trash/restore.ts';
import { figuresOf, type RequestFigures } from '#test/support/dynamo-figures.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { round } from './lib/stats.ts';

/**
 * `npm run bench -- --trash [--quick]`: what a delete and a restore of a ticket with 100 messages cost (round trips,
 * items read and written, write units, ms), the same ticket deleted and restored SAMPLES times; and the purge's
 * throughput: PURGED tickets of 10 messages each (--quick: 50) deleted, then purged by one caller, 4 at a time as
 * the runner does (lib/trash/purge.ts), with the clock past their purge time. To bench/runs/results-trash.json.
 */
const SAMPLES = 5;
const DAY_MICROS = 86_400_000_000;

export async function runTrashOnly(options: { quick: boolean; endpoint: string }) {
  return runPart({
    file: 'results-trash.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async () => {
      const account = await benchAccount('bench-trash', {
        agents: [{ email: 'agent@trash.bench', name: 'Agent' }],
      });
      const agentId = (account.agents[0] as { id: number }).id;
      const withMessages = async (subject: string, n: number) => {
        const ticket = await createTicket(account.accountId, {
          subject,
          description: 'The first message.',
          requester_email: 'r@trash.bench',
        });
        for (let i = 0; i < n; i++) {
          await postMessage(account.accountId, ticket.uuid, {
            body: `Reply ${i}: ${'x'.repeat(190)}`,
            agent_id: agentId,
          });
        }
        return ticket.uuid;
      };
      const uuid = await withMessages('A ticket with one hundred messages', 100);
      const deletes: (RequestFigures & { ms: number })[] = [];
      const restores: (RequestFigures & { ms: number })[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        let started = performance.now();
        deletes.push({
          ...(await figuresOf(() => deleteObject(account.accountId, 'ticket', uuid))),
          ms: performance.now() - started,
        });
        started = performance.now();
        restores.push({
          ...(await figuresOf(() => restoreObject(account.accountId, uuid))),
          ms: performance.now() - started,
        });
      }
      const summary = (rows: typeof deletes) => {
        const last = rows[rows.length - 1] as (typeof rows)[number];
        const ms = rows.map((r) => r.ms).sort((a, b) => a - b);
        return {
          roundTrips: last.roundTrips,
          itemsRead: last.itemsRead,
          itemsWritten: last.itemsWritten,
          writeUnits: round(last.writeUnits, 1),
          medianMs: round(ms[Math.floor(ms.length / 2)] as number, 1),
        };
      };
      const deleteCost = summary(deletes);
      const restoreCost = summary(restores);
      log(`  delete of a ticket with 100 messages: ${JSON.stringify(deleteCost)}`);
      log(`  restore of it: ${JSON.stringify(restoreCost)}`);

      const count = options.quick ? 50 : 200;
      const doomed: string[] = [];
      for (let i = 0; i < count; i++) doomed.push(await withMessages(`Purge ${i}`, 10));
      for (const d of doomed) await deleteObject(account.accountId, 'ticket', d);
      const later = Date.now() * 1000 + 31 * DAY_MICROS;
      const started = performance.now();
      const due = (await duePurges(Math.floor(later / 1000), 10_000)).filter(
        (d) => d.accountId === account.accountId,
      );
      let items = 0;
      for (let i = 0; i < due.length; i += 4) {
        const removed = await Promise.all(
          due.slice(i, i + 4).map((d) => purgeOne(d.accountId, d.uuid, later)),
        );
        items += removed.reduce<number>((a, n) => a + (n?.items ?? 0), 0);
      }
      const seconds = (performance.now() - started) / 1000;
      const purge = {
        tickets: due.length,
        messagesEach: 10,
        itemsRemoved: items,
        seconds: round(seconds, 2),
        ticketsPerSecond: round(due.length / seconds, 1),
        itemsPerSecond: round(items / seconds, 1),
      };
      log(`  purge: ${JSON.stringify(purge)}`);
      return { delete: deleteCost, restore: restoreCost, purge };
    },
  });
}
