import { describe, expect, it } from 'vitest';
import { handler as authorize } from '#functions/authorizer.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, tokenEvent } from '#test/support/events.ts';
import { useGateway } from '#test/support/http.ts';
import {
  grantedActions,
  iamActionsOf,
  keyHashHolders,
  keyHashUsers,
  undeclaredActions,
  usedActions,
} from '#test/support/table-actions.ts';

/**
 * The check of test/support/table-actions-setup.ts (after every test file, each function used only its
 * granted DynamoDB actions) is only worth something if it can fail: these prove it does.
 */
const without = (name: string, action: string) => ({
  ...grantedActions,
  [name]: (grantedActions[name] ?? []).filter((a) => a !== action),
});

describe('DynamoDB actions per function', () => {
  const gateway = useGateway();
  const body = { subject: 'S', description: 'D', requester_email: 'r@client.test' };

  it('are recorded for a handler that a test calls directly', async () => {
    const account = await createTestAccount();
    expect([...usedActions.keys()]).toEqual([]); // the account was set up outside any function
    const event = proxyEvent({ method: 'POST', path: '/api/tickets', caller: callerOf(account), body });
    expect((await createTicket(event, lambdaContext)).statusCode).toBe(201);
    await authorize(tokenEvent(`Bearer ${account.apiKey}`));
    expect([...usedActions.keys()].sort()).toEqual(['authorizer', 'createTicket']);
  });

  it('are recorded through the gateway, and the check fails when a function lacks one of them', async () => {
    const account = await createTestAccount();
    usedActions.clear(); // what follows is only what the gateway's request recorded
    const response = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body });
    expect(response.status).toBe(201);
    expect([...(usedActions.get('createTicket') ?? [])]).toContain('PutItem');
    expect([...(usedActions.get('authorizer') ?? [])]).toContain('GetItem');
    expect(undeclaredActions(usedActions, grantedActions)).toEqual([]);
    expect(undeclaredActions(usedActions, without('createTicket', 'PutItem'))).toEqual([
      'createTicket: PutItem',
    ]);
    expect(undeclaredActions(usedActions, without('authorizer', 'GetItem'))).toEqual(['authorizer: GetItem']);
  });

  it('are recorded for keyed hashes too: the check fails for a function that takes one without the secret', async () => {
    const account = await createTestAccount();
    keyHashUsers.clear();
    // A search names its words by their keyed terms (lib/data/index/keyed.ts), a filter its value by its hash.
    const response = await gateway.call(
      'GET',
      '/api/tickets?search=printer&requester_email=kim@client.test',
      {
        key: account.apiKey,
      },
    );
    expect(response.status).toBe(200);
    expect([...keyHashUsers].sort()).toEqual(['authorizer', 'listTickets']);
    expect([...keyHashUsers].filter((name) => !keyHashHolders.has(name))).toEqual([]);
    // Without the secret in its declaration (as GET routes had before the index's keys were keyed): refused.
    const holders = new Set([...keyHashHolders].filter((name) => name !== 'listTickets'));
    expect([...keyHashUsers].filter((name) => !holders.has(name))).toEqual(['listTickets']);
  });

  it('of a transaction are the actions of its items; a call on an index needs a grant nobody has', () => {
    const TransactItems = [{ Put: {} }, { Update: {} }, { ConditionCheck: {} }, { Delete: {} }];
    expect(iamActionsOf('TransactWriteItemsCommand', { TransactItems })).toEqual([
      'PutItem',
      'UpdateItem',
      'ConditionCheckItem',
      'DeleteItem',
    ]);
    expect(iamActionsOf('TransactGetItemsCommand', { TransactItems: [{ Get: {} }] })).toEqual(['GetItem']);
    expect(iamActionsOf('BatchWriteItemCommand', {})).toEqual(['BatchWriteItem']);
    expect(iamActionsOf('BatchGetItemCommand', {})).toEqual(['BatchGetItem']);
    expect(iamActionsOf('QueryCommand', { IndexName: 'gsi1' })).toEqual(['Query on index gsi1']);
  });
});
