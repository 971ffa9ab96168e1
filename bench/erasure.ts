import { createDeal } from '#lib/deals/create-deal.ts';
import { startErasure } from '#lib/erasures/erasures.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import { postMessage } from '#lib/tickets/messages/post.ts';
import { figuresOf } from '#test/support/dynamo-figures.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { round } from './lib/stats.ts';

/**
 * `npm run bench -- --erasure [--quick]`: the erasure of a person with 10, 100 and 1,000 tickets (--quick: 10 and
 * 100), each ticket with the person's description, a message of theirs and an agent's reply naming them, and one
 * deal of their contact: the job run to completion by one caller, as the runner runs it (lib/erasures/job.ts),
 * with its steps, round trips, items read and written, write units and seconds. To bench/runs/results-erasure.json
 * (docs/capacity.md, "Erasures", quotes it; never published).
 */
export async function runErasureOnly(options: { quick: boolean; endpoint: string }) {
  return runPart({
    file: 'results-erasure.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async () => {
      const results: Record<string, unknown>[] = [];
      for (const n of options.quick ? [10, 100] : [10, 100, 1_000]) {
        const account = await benchAccount(`bench-erasure-${n}`, {
          agents: [{ email: 'agent@erasure.bench', name: 'Agent' }],
        });
        const agentId = (account.agents[0] as { id: number }).id;
        const email = `ada.lovelace.${n}@erasure.bench`;
        await createDeal(account.accountId, {
          name: 'Analytical engine',
          amount: '100',
          currency: 'EUR',
          contact_email: email,
          contact_first_name: 'Ada',
          contact_last_name: 'Lovelace',
          contact_phone: '+44 20 0000 0000',
        });
        for (let i = 0; i < n; i++) {
          const ticket = await createTicket(account.accountId, {
            subject: `Ada Lovelace question ${i}`,
            description: `Hello, Ada here, ${email}.`,
            requester_email: email,
            requester_name: 'Ada Lovelace',
          });
          await postMessage(account.accountId, ticket.uuid, { body: 'Any news?', author: 'requester' });
          await postMessage(account.accountId, ticket.uuid, {
            body: 'Dear Ada Lovelace, …',
            agent_id: agentId,
          });
        }
        const erasure = await startErasure(account.accountId, { email }, undefined);
        const started = performance.now();
        let steps = 0;
        const figures = await figuresOf(async () => {
          steps = await runErasure(account.accountId, erasure.id);
        });
        const seconds = (performance.now() - started) / 1000;
        const row = {
          tickets: n,
          steps,
          roundTrips: figures.roundTrips,
          itemsRead: figures.itemsRead,
          itemsWritten: figures.itemsWritten,
          writeUnits: round(figures.writeUnits, 1),
          writeUnitsPerTicket: round(figures.writeUnits / n, 1),
          seconds: round(seconds, 2),
        };
        log(`  erasure of a person with ${n} tickets: ${JSON.stringify(row)}`);
        results.push(row);
      }
      return { erasures: results };
    },
  });
}
