import { describe, expect, it } from 'vitest';
import { handler } from '#functions/pipelines-list.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';

const stages = (names: string[]) => names.map((name, i) => ({ name, color: '#112233', probability: i * 10 }));

describe('GET /api/pipelines (handler)', () => {
  it('lists active pipelines by id with stages by position and exactly one default', async () => {
    const account = await createTestAccount({
      pipelines: [
        { name: 'Sales', stages: stages(['Lead', 'Won']) },
        { name: 'Renewals', default: true, stages: stages(['Upcoming', 'Talks', 'Renewed']) },
        { name: 'Old', active: false, stages: stages(['Gone']) },
      ],
    });
    const response = await handler(
      proxyEvent({ path: '/api/pipelines', caller: callerOf(account) }),
      lambdaContext,
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers?.['Content-Type']).toBe('application/json');
    const { data } = JSON.parse(response.body);
    expect(data.map((p: { name: string }) => p.name)).toEqual(['Sales', 'Renewals']);
    expect(
      data.filter((p: { is_default: boolean }) => p.is_default).map((p: { name: string }) => p.name),
    ).toEqual(['Renewals']);
    expect(data[1].stages).toEqual([
      { id: expect.any(Number), name: 'Upcoming', color: '#112233', probability: 0, position: 1 },
      { id: expect.any(Number), name: 'Talks', color: '#112233', probability: 10, position: 2 },
      { id: expect.any(Number), name: 'Renewed', color: '#112233', probability: 20, position: 3 },
    ]);
    expect(data[0].id).toBeLessThan(data[1].id);
  });

  it('gives a new account without pipelines a default pipeline with stages', async () => {
    const account = await createTestAccount();
    const response = await handler(
      proxyEvent({ path: '/api/pipelines', caller: callerOf(account) }),
      lambdaContext,
    );
    const { data } = JSON.parse(response.body);
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ name: 'Sales', is_default: true });
    expect(data[0].stages.map((s: { position: number }) => s.position)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("never shows another account's pipelines", async () => {
    const mine = await createTestAccount({ pipelines: [{ name: 'Mine', stages: stages(['A']) }] });
    await createTestAccount({ pipelines: [{ name: 'Theirs', stages: stages(['B']) }] });
    const response = await handler(
      proxyEvent({ path: '/api/pipelines', caller: callerOf(mine) }),
      lambdaContext,
    );
    expect(JSON.parse(response.body).data.map((p: { name: string }) => p.name)).toEqual(['Mine']);
  });

  it('answers 401 when the request did not pass the authorizer', async () => {
    const response = await handler(proxyEvent({ path: '/api/pipelines' }), lambdaContext);
    expect(response.statusCode).toBe(401);
    expect(JSON.parse(response.body)).toEqual({ message: 'Unauthenticated.' });
  });
});
