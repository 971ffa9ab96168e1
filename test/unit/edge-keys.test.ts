import { describe, expect, it } from 'vitest';
import { type EdgeApi, placeAtEdge, type UsagePlan } from '#infra/admin/edge-keys.ts';
import { edgeKeyValue, edgeLimitsOf, PLAN_EDGE_LIMITS } from '#lib/accounts/edge-limits.ts';

/**
 * The admin path's edge step (`apply --aws`: infra/admin/edge-keys.ts) against an in-memory API Gateway control
 * plane that keeps keys, usage plans and their keys as the service does (a key in at most one usage plan of a stage
 * is the caller's rule, checked here); the SDK adapter (infra/admin/edge-api.ts) only spells these calls.
 */
function fakeApi(prefix: string) {
  const keys = new Map<string, { id: string; value: string }>();
  const stage = [{ apiId: 'api1', stage: 'prod' }];
  const plans: (UsagePlan & { keys: Set<string> })[] = ['pro', 'enterprise'].map((plan) => ({
    id: `up-${plan}`,
    name: `${prefix}-${plan}`,
    apiStages: stage,
    throttle: { ...PLAN_EDGE_LIMITS[plan as 'pro'] },
    keys: new Set<string>(),
  }));
  const calls: string[] = [];
  const planOf = (id: string) => {
    const plan = plans.find((p) => p.id === id);
    if (!plan) throw new Error(`no usage plan ${id}`);
    return plan;
  };
  const api: EdgeApi = {
    findKey: async (name) => keys.get(name),
    createKey: async (name, value) => {
      calls.push(`create key ${name}`);
      const key = { id: `k${keys.size + 1}`, value };
      keys.set(name, key);
      return key;
    },
    usagePlans: async () => plans.map(({ keys: _k, ...p }) => ({ ...p, throttle: { ...p.throttle } })),
    createUsagePlan: async (name, limits, apiStages) => {
      calls.push(`create plan ${name}`);
      const plan = {
        id: `up-${plans.length + 1}`,
        name,
        apiStages,
        throttle: { ...limits },
        keys: new Set<string>(),
      };
      plans.push(plan);
      return plan;
    },
    setThrottle: async (id, limits) => {
      calls.push(`throttle ${planOf(id).name}`);
      planOf(id).throttle = { ...limits };
    },
    keysOf: async (id) => [...planOf(id).keys],
    addKey: async (id, keyId) => {
      calls.push(`add ${planOf(id).name}`);
      if (plans.some((p) => p.keys.has(keyId)))
        throw new Error('a key is in one usage plan of a stage at most');
      planOf(id).keys.add(keyId);
    },
    removeKey: async (id, keyId) => {
      calls.push(`remove ${planOf(id).name}`);
      planOf(id).keys.delete(keyId);
    },
  };
  const placeOf = (keyId: string) => plans.filter((p) => p.keys.has(keyId)).map((p) => p.name);
  return { api, calls, keys, plans, placeOf };
}

const PREFIX = 'deskpipe-prod';
const ACCOUNT = '7d0c5b4e-3f1a-4c2b-9a8e-1f2e3d4c5b6a';

describe('an account at the edge (apply --aws)', () => {
  it("creates the account's key (its value the authorizer's usageIdentifierKey) in its plan's usage plan; applied again, changes nothing", async () => {
    const edge = fakeApi(PREFIX);
    const placed = await placeAtEdge(edge.api, PREFIX, { id: ACCOUNT, plan: 'pro', rateLimitPerMinute: 400 });
    expect(placed).toEqual({ api_key_id: 'k1', usage_plan: `${PREFIX}-pro` });
    expect(edge.keys.get(`${PREFIX}-${ACCOUNT}`)?.value).toBe(edgeKeyValue(ACCOUNT));
    expect(edge.placeOf('k1')).toEqual([`${PREFIX}-pro`]);
    edge.calls.length = 0;
    await placeAtEdge(edge.api, PREFIX, { id: ACCOUNT, plan: 'pro', rateLimitPerMinute: 400 });
    expect(edge.calls).toEqual([]);
  });

  it('moves the key when the plan changes, and out of every usage plan for a plan without the API', async () => {
    const edge = fakeApi(PREFIX);
    await placeAtEdge(edge.api, PREFIX, { id: ACCOUNT, plan: 'pro', rateLimitPerMinute: 400 });
    const moved = await placeAtEdge(edge.api, PREFIX, {
      id: ACCOUNT,
      plan: 'enterprise',
      rateLimitPerMinute: 1000,
    });
    expect(moved.usage_plan).toBe(`${PREFIX}-enterprise`);
    expect(edge.placeOf('k1')).toEqual([`${PREFIX}-enterprise`]);
    const down = await placeAtEdge(edge.api, PREFIX, { id: ACCOUNT, plan: 'startup', rateLimitPerMinute: 0 });
    expect(down).toEqual({ api_key_id: 'k1', usage_plan: null });
    expect(edge.placeOf('k1')).toEqual([]);
  });

  it("gives an account whose own limit needs more than its plan's figures a usage plan of its own, kept at them; back to the plan's limit, back to the plan's usage plan", async () => {
    const edge = fakeApi(PREFIX);
    const own = `${PREFIX}-account-${ACCOUNT}`;
    await placeAtEdge(edge.api, PREFIX, { id: ACCOUNT, plan: 'enterprise', rateLimitPerMinute: 36_000 });
    expect(edge.placeOf('k1')).toEqual([own]);
    expect(edge.plans.find((p) => p.name === own)).toMatchObject({
      throttle: edgeLimitsOf('enterprise', 36_000),
      apiStages: [{ apiId: 'api1', stage: 'prod' }],
    });
    expect(edgeLimitsOf('enterprise', 36_000)).toEqual({ rateLimit: 720, burstLimit: 1440 });
    await placeAtEdge(edge.api, PREFIX, { id: ACCOUNT, plan: 'enterprise', rateLimitPerMinute: 60_000 });
    expect(edge.plans.find((p) => p.name === own)?.throttle).toEqual({ rateLimit: 1200, burstLimit: 2400 });
    expect(edge.placeOf('k1')).toEqual([own]);
    // A lower own limit than the plan's keeps the plan's figures, and so its usage plan.
    await placeAtEdge(edge.api, PREFIX, { id: ACCOUNT, plan: 'enterprise', rateLimitPerMinute: 20 });
    expect(edge.placeOf('k1')).toEqual([`${PREFIX}-enterprise`]);
  });

  it("refuses before the stage's usage plans exist", async () => {
    const edge = fakeApi('deskpipe-dev');
    await expect(
      placeAtEdge(edge.api, PREFIX, { id: ACCOUNT, plan: 'pro', rateLimitPerMinute: 400 }),
    ).rejects.toThrow('deploy the stage');
  });
});
