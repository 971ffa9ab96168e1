import { describe, expect, it } from 'vitest';
import { dynamo } from '#lib/data/store/client.ts';
import { agentTickets } from '#lib/data/tickets/tickets.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { peopleAccount } from '#test/support/people.ts';
import { ticketsThrough } from '#test/support/tickets.ts';

/**
 * A hand-back step reads its page's tickets in one BatchGetItem (lib/data/index/oldest.ts, oldestListed). DynamoDB
 * may answer part of a batch and name the rest UnprocessedKeys (throttling, a 16 MB answer): batchGetAll sends those
 * again, so no ticket of the page reads as gone (a hand-back skips a posting whose ticket it does not find, and
 * saves its place past it: a ticket dropped so would stay with the retired agent).
 */
const gateway = useGateway();
const tickets = ticketsThrough(gateway);

/** The next BatchGetItem of two keys or more answers its first half only, the rest named UnprocessedKeys. */
function answerHalfOnce(): () => void {
  const name = `answerHalfOnce${Math.random()}`;
  let done = false;
  type Request = { Keys: unknown[] };
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input: { RequestItems?: Record<string, Request> } }).input;
      const [table, request] = Object.entries(input.RequestItems ?? {})[0] ?? [];
      if (done || context.commandName !== 'BatchGetItemCommand' || !table || !request) return next(args);
      if (request.Keys.length < 2) return next(args);
      done = true;
      const half = Math.ceil(request.Keys.length / 2);
      const kept = { ...request, Keys: request.Keys.slice(0, half) };
      const answer = await next({ ...args, input: { ...input, RequestItems: { [table]: kept } } });
      const output = answer.output as { UnprocessedKeys?: Record<string, Request> };
      output.UnprocessedKeys = { [table]: { ...request, Keys: request.Keys.slice(half) } };
      return answer;
    },
    { step: 'initialize', name },
  );
  return () => dynamo.middlewareStack.remove(name);
}

describe("a hand-back page's BatchGetItem answered in part", () => {
  it('sends the unprocessed keys again: every ticket of the page is read, none taken for gone', async () => {
    const d = await peopleAccount(gateway);
    const key = d.account.apiKey;
    const ann = await d.agent({ email: 'ann@desk.test', name: 'Ann' });
    const made: string[] = [];
    for (let i = 0; i < 4; i++) {
      const ticket = await tickets.create(key);
      await tickets.update(key, ticket.uuid, { assignee_id: ann.id });
      made.push(ticket.uuid);
    }
    const uninstall = answerHalfOnce();
    try {
      const { result, operations } = await withFault(undefined, () =>
        agentTickets(d.account.accountId, ann.id, 'open', { after: null, limit: 25 }),
      );
      expect(operations.filter((o) => o === 'BatchGetItem')).toHaveLength(2);
      expect(result.map((l) => l.stored?.entity.uuid)).toEqual(made);
    } finally {
      uninstall();
    }
  });
});
