import { describe, expect, it } from 'vitest';
import { AccountFileInvalid, parseAccountFile } from '#lib/accounts/account-file.ts';
import { queryOf } from '#lib/http/request.ts';
import { recognisedBy } from '#lib/list-params.ts';
import { ListQueryParams } from '#lib/tickets/list-query.ts';
import { proxyEvent } from '#test/support/events.ts';

/**
 * Names the input chooses, looked up without Object.prototype (issue 25): each of these found an inherited
 * member before, and crashed or answered as if the name were known.
 */
const NAMES = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty'];

describe('names of Object.prototype members', () => {
  it.each(NAMES)('an account file with a top-level key %s is refused naming it, not a TypeError', (name) => {
    const raw = JSON.parse(`{"slug":"a-b","name":"A","plan":"pro",${JSON.stringify(name)}:1}`);
    let thrown: unknown;
    try {
      parseAccountFile(raw);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AccountFileInvalid);
    expect((thrown as AccountFileInvalid).problems.map((p) => p.path)).toEqual([name]);
  });

  it.each(NAMES)('a list does not recognise a parameter named %s', (name) => {
    expect(recognisedBy(ListQueryParams)(name)).toBe(false);
    expect(recognisedBy(ListQueryParams)('status')).toBe(true);
  });

  it('queryOf keeps a parameter named __proto__ as an ordinary one (as API Gateway sends it, parsed JSON)', () => {
    const event = {
      ...proxyEvent({ path: '/api/tickets' }),
      ...JSON.parse(
        '{"queryStringParameters":{"__proto__":"x","constructor":"y"},' +
          '"multiValueQueryStringParameters":{"__proto__":["x"],"constructor":["y"]}}',
      ),
    };
    const query = queryOf(event);
    expect(Object.getPrototypeOf(query)).toBe(Object.prototype);
    expect(Object.entries(query)).toEqual([
      ['__proto__', ['x']],
      ['constructor', ['y']],
    ]);
  });
});
