import { describe, expect, it } from 'vitest';
import { nowMillis } from '#lib/time.ts';
import { createTestAccount, useTestAccount } from '#test/support/accounts.ts';
import { atTime, useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';

/** Idempotency-Key on writes (decisions.md, "Safe retries: Idempotency-Key"). */
const gateway = useGateway();
// The service's clock stands still: a dry run and the faulted run after it make the same calls whatever the
// machine's load (the rules cache's freshness check, a GetItem once 5 s have passed, would shift the positions).
useManualClock({ lazy: true });
const account = useTestAccount();

let n = 0;
const uniqueKey = () => `key-${Date.now()}-${++n}`;
const ticket = (subject = 'Idempotent', extra: Record<string, unknown> = {}) => ({
  subject,
  description: 'd',
  requester_email: 'idem@client.test',
  ...extra,
});
const post = (key: string, body: unknown, idempotencyKey?: string, path = '/api/tickets') =>
  gateway.call('POST', path, {
    key,
    body,
    ...(idempotencyKey ? { headers: { 'Idempotency-Key': idempotencyKey } } : {}),
  });
const total = async (key: string, query: string) =>
  (await gateway.call('GET', `/api/tickets?${query}`, { key })).body.meta.total as number;

describe('Idempotency-Key', () => {
  it('replays the kept answer byte for byte, marked, without a second ticket or number', async () => {
    const key = uniqueKey();
    const first = await post(account.apiKey, ticket('Replay me'), key);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await post(account.apiKey, ticket('Replay me'), key);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toBe('application/json');
    expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(await total(account.apiKey, 'search=replay')).toBe(1);
    // The replay took no reference number: the next create has the next one.
    const next = await post(account.apiKey, ticket('After replay'));
    const number = (r: string) => Number(r.split('-')[1]);
    expect(number(next.body.ticket.reference)).toBe(number(first.body.ticket.reference) + 1);
  });

  it('compares bodies as data: other key order and spacing replay; a quoted key is the same key', async () => {
    const key = uniqueKey();
    const first = await post(account.apiKey, ticket('Order', { priority: 'high' }), key);
    const reordered = `{ "priority": "high", "requester_email": "idem@client.test", "description": "d", "subject": "Order" }`;
    const again = await post(account.apiKey, reordered, `"${key}"`);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('refuses the same key for another body, path or method with 422 on idempotency_key, changing nothing', async () => {
    const key = uniqueKey();
    await post(account.apiKey, ticket('Original'), key);
    const before = await total(account.apiKey, '');
    for (const response of [
      await post(account.apiKey, ticket('Different'), key),
      await post(
        account.apiKey,
        { name: 'Deal', contact_email: 'x@y.test', contact_first_name: 'X' },
        key,
        '/api/deals',
      ),
    ]) {
      expect(response.status).toBe(422);
      expect(response.body).toEqual({
        message: 'The idempotency key was already used for a different request.',
        errors: { idempotency_key: ['The idempotency key was already used for a different request.'] },
      });
    }
    expect(await total(account.apiKey, '')).toBe(before);
  });

  it('10 concurrent requests with one key make exactly one change; the others get 409 or the replay', async () => {
    const fresh = await createTestAccount();
    const key = uniqueKey();
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => post(fresh.apiKey, ticket('Concurrent'), key)),
    );
    const created = responses.filter((r) => r.status === 201 && !r.headers.get('idempotent-replayed'));
    expect(created).toHaveLength(1);
    for (const r of responses) {
      if (r === created[0]) continue;
      if (r.status === 409) {
        expect(r.body).toEqual({ message: 'A request with this idempotency key is still being processed.' });
        expect(r.headers.get('retry-after')).toBe('1');
      } else {
        expect(r.status).toBe(201);
        expect(r.headers.get('idempotent-replayed')).toBe('true');
        expect(r.text).toBe(created[0]?.text);
      }
    }
    expect(await total(fresh.apiKey, '')).toBe(1);
    const retry = await post(fresh.apiKey, ticket('Concurrent'), key);
    expect(retry.text).toBe(created[0]?.text);
  });

  it('keeps nothing for a failed request: the fixed request with the same key runs', async () => {
    const key = uniqueKey();
    const bad = await post(account.apiKey, ticket('', { priority: 'soon' }), key);
    expect(bad.status).toBe(422);
    const again = await post(account.apiKey, ticket('', { priority: 'soon' }), key);
    expect(again.status).toBe(422);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    const fixed = await post(account.apiKey, ticket('Fixed now', { priority: 'high' }), key);
    expect(fixed.status).toBe(201);
    expect(fixed.headers.get('idempotent-replayed')).toBeNull();
  });

  it('scopes keys to the account', async () => {
    const other = await createTestAccount();
    const key = uniqueKey();
    const mine = await post(account.apiKey, ticket('Scoped'), key);
    const theirs = await post(other.apiKey, ticket('Scoped'), key);
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.ticket.uuid).not.toBe(mine.body.ticket.uuid);
  });

  it('treats a key older than 24 hours as a new request', async () => {
    const key = uniqueKey();
    const first = await post(account.apiKey, ticket('Yesterday'), key);
    const later = nowMillis() + (24 * 3600 + 1) * 1000;
    const next = await atTime(later, () => post(account.apiKey, ticket('Yesterday'), key));
    expect(next.status).toBe(201);
    expect(next.headers.get('idempotent-replayed')).toBeNull();
    expect(next.body.ticket.uuid).not.toBe(first.body.ticket.uuid);
    const replay = await atTime(later + 3_600_000, () => post(account.apiKey, ticket('Yesterday'), key));
    expect(replay.text).toBe(next.text);
  });

  it('replays deals too', async () => {
    const key = uniqueKey();
    const body = { name: 'Deal', contact_email: `${key}@deals.test`, contact_first_name: 'Nora' };
    const first = await post(account.apiKey, body, key, '/api/deals');
    expect(first.status).toBe(201);
    const again = await post(account.apiKey, body, key, '/api/deals');
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('refuses a key that is empty, too long or not printable ASCII', async () => {
    for (const bad of ['x'.repeat(256), 'clé', '""']) {
      const response = await post(account.apiKey, ticket('Bad key'), bad);
      expect(response.status, bad).toBe(422);
      expect(response.body.errors).toEqual({
        idempotency_key: ['The idempotency key must be 1 to 255 printable ASCII characters.'],
      });
    }
    expect(await total(account.apiKey, 'search=bad%20key')).toBe(0);
  });

  it('ignores the header on reads', async () => {
    const response = await gateway.call('GET', '/api/tickets', {
      key: account.apiKey,
      headers: { 'Idempotency-Key': 'x'.repeat(300) },
    });
    expect(response.status).toBe(200);
  });
});

/**
 * The key's record is written in the commit of the request that holds the key, so a retry's claim arriving
 * while that commit runs meets DynamoDB's TransactionConflictException on a plain Put. That is "still running"
 * (409, Retry-After), never a 500; a later retry with the key applies the change once. Found by the deal fault
 * sweep (a 500 before).
 */
describe('a conflict on the Idempotency-Key claim', () => {
  it('answers 409 with Retry-After, and the retry applies the change once', async () => {
    const key = uniqueKey();
    const created = await post(account.apiKey, ticket('Claimed'));
    const path = `/api/tickets/${created.body.ticket.uuid}`;
    const patch = (idempotencyKey = key) =>
      gateway.call('PATCH', path, {
        key: account.apiKey,
        body: { subject: 'Claimed again' },
        headers: { 'Idempotency-Key': idempotencyKey },
      });
    // A dry run of the same request (another key: version 2) names the position of the claim's Put; a PATCH
    // back (version 3) makes the keyed one a change again.
    const dry = await withFault(undefined, () => patch(uniqueKey()));
    const claimAt = dry.operations.indexOf('PutItem') + 1;
    expect(claimAt).toBeGreaterThan(0);
    await gateway.call('PATCH', path, { key: account.apiKey, body: { subject: 'Claimed' } });
    const faulted = await withFault({ at: claimAt, mode: 'conflict' }, () => patch());
    expect(faulted.operations[claimAt - 1]).toBe('PutItem');
    expect(faulted.result.status, faulted.result.text).toBe(409);
    expect(faulted.result.headers.get('retry-after')).toBe('1');
    const retry = await patch();
    expect(retry.status, retry.text).toBe(200);
    const read = await gateway.call('GET', path, { key: account.apiKey });
    expect(read.headers.get('etag')).toBe('"4"'); // the faulted request wrote nothing, the retry once
    expect(read.body.data.subject).toBe('Claimed again');
  });
});
