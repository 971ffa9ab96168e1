import {
  EDGE_PLANS,
  type EdgeLimits,
  edgeKeyValue,
  edgeLimitsOf,
  hasOwnEdgeLimits,
} from '#lib/accounts/edge-limits.ts';

/**
 * An account's place at the edge (docs/deploy.md, "Tenants at the edge"), made by `apply --aws` whenever it creates
 * an account or changes its plan or limit: its API Gateway API key (named `<stage prefix>-<account id>`, its value
 * the one the authorizer returns: lib/accounts/edge-limits.ts), in exactly one usage plan of the stage: its plan's
 * (`<prefix>-pro`, `<prefix>-enterprise`, made by the stack), or, for an account whose own per-minute limit needs
 * more, one of its own (`<prefix>-account-<id>`, at the figures the same rule gives, made and kept here); in none for
 * a plan without the API. Idempotent: applied again, it changes nothing.
 */
export interface UsagePlan {
  id: string;
  name: string;
  apiStages: { apiId: string; stage: string }[];
  throttle?: Partial<EdgeLimits> | undefined;
}

/** The API Gateway control plane calls this needs (./edge-api.ts: API Gateway's SDK client). */
export interface EdgeApi {
  findKey(name: string): Promise<{ id: string } | undefined>;
  createKey(name: string, value: string): Promise<{ id: string }>;
  usagePlans(): Promise<UsagePlan[]>;
  createUsagePlan(name: string, limits: EdgeLimits, apiStages: UsagePlan['apiStages']): Promise<UsagePlan>;
  setThrottle(planId: string, limits: EdgeLimits): Promise<void>;
  keysOf(planId: string): Promise<string[]>;
  addKey(planId: string, keyId: string): Promise<void>;
  removeKey(planId: string, keyId: string): Promise<void>;
}

export interface EdgeAccount {
  id: string;
  plan: string;
  /** Its per-minute limit (its plan's, or its own). */
  rateLimitPerMinute: number;
}

export interface EdgePlace {
  api_key_id: string;
  /** The usage plan its key is in; null for a plan without the API. */
  usage_plan: string | null;
}

export async function placeAtEdge(api: EdgeApi, prefix: string, account: EdgeAccount): Promise<EdgePlace> {
  const name = `${prefix}-${account.id}`;
  const key = (await api.findKey(name)) ?? (await api.createKey(name, edgeKeyValue(account.id)));
  const plans = (await api.usagePlans()).filter((p) => p.name.startsWith(`${prefix}-`));
  const target = await targetPlan(api, prefix, account, plans);
  for (const plan of plans) {
    if (plan.id === target?.id) continue;
    if ((await api.keysOf(plan.id)).includes(key.id)) await api.removeKey(plan.id, key.id);
  }
  if (target && !(await api.keysOf(target.id)).includes(key.id)) await api.addKey(target.id, key.id);
  return { api_key_id: key.id, usage_plan: target?.name ?? null };
}

/** The usage plan the account's key belongs in, made or brought to its figures when it is the account's own. */
async function targetPlan(
  api: EdgeApi,
  prefix: string,
  account: EdgeAccount,
  plans: UsagePlan[],
): Promise<UsagePlan | undefined> {
  if (!(EDGE_PLANS as readonly string[]).includes(account.plan)) return undefined;
  const planOf = (name: string) => plans.find((p) => p.name === name);
  const shared = planOf(`${prefix}-${account.plan}`);
  if (!shared) throw new Error(`no usage plan ${prefix}-${account.plan}: deploy the stage's stack first`);
  if (!hasOwnEdgeLimits(account.plan, account.rateLimitPerMinute)) return shared;
  const limits = edgeLimitsOf(account.plan, account.rateLimitPerMinute);
  const own = planOf(`${prefix}-account-${account.id}`);
  if (!own) return api.createUsagePlan(`${prefix}-account-${account.id}`, limits, shared.apiStages);
  if (own.throttle?.rateLimit !== limits.rateLimit || own.throttle?.burstLimit !== limits.burstLimit)
    await api.setThrottle(own.id, limits);
  return own;
}
