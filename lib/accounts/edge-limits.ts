/**
 * The edge throttle (docs/capacity.md, "Tenants at the edge"): API Gateway's token bucket per account, in front of
 * every function, so one account's requests past its share are refused before they take a Lambda. Deployed, a usage
 * plan per plan (infra/nested/api-stack.ts) throttles each account's API Gateway API key, which the authorizer names
 * (apiKeySource AUTHORIZER); an account with its own per-minute limit has a usage plan of its own, at the figures
 * the same rule gives (infra/admin/edge-keys.ts). The local gateway runs the same bucket per account at the same
 * figures (infra/local/edge-throttle.ts). The per-minute count (decisions.md, "Rate limits per plan") stays the
 * contract's limit; this one bounds what an account can hold of the functions' concurrency.
 */
export interface EdgeLimits {
  /** Steady requests a second. */
  rateLimit: number;
  /** Requests at once from a full bucket. */
  burstLimit: number;
}

/**
 * The plans that reach the API, and their edge figures. The rate is above the plan's per-minute average (pro 400 a
 * minute: 6.7/s; enterprise 1,000: 16.7/s), so a client within its minute never meets the edge at a steady pace;
 * the burst lets the contract's concurrent requests through (50 and 100 at once), so below those the per-minute
 * count, with its headers, is what a client meets. What they bound: one account's requests in flight, each held
 * at most the functions' 10 s timeout, are at most rate × 10 s once a burst is spent (pro 100, enterprise 200).
 */
export const EDGE_PLANS = ['pro', 'enterprise'] as const;
export type EdgePlan = (typeof EDGE_PLANS)[number];
export const PLAN_EDGE_LIMITS: Record<EdgePlan, EdgeLimits> = {
  pro: { rateLimit: 10, burstLimit: 50 },
  enterprise: { rateLimit: 20, burstLimit: 100 },
};

/**
 * An account's edge figures: its plan's, unless its own per-minute limit (the account file's
 * `rate_limit_per_minute`) needs more: then a fifth above that limit's average rate, and two seconds of it as the
 * burst. Such an account has a usage plan of its own (infra/admin/edge-keys.ts).
 */
export function edgeLimitsOf(plan: string, perMinute: number): EdgeLimits {
  const base = PLAN_EDGE_LIMITS[plan as EdgePlan] ?? PLAN_EDGE_LIMITS.pro;
  const rateLimit = Math.max(base.rateLimit, Math.ceil((perMinute * 1.2) / 60));
  return { rateLimit, burstLimit: Math.max(base.burstLimit, 2 * rateLimit) };
}

/** Whether an account's figures are not its plan's: it needs a usage plan of its own. */
export function hasOwnEdgeLimits(plan: string, perMinute: number): boolean {
  const own = edgeLimitsOf(plan, perMinute);
  const base = PLAN_EDGE_LIMITS[plan as EdgePlan];
  return !base || own.rateLimit !== base.rateLimit || own.burstLimit !== base.burstLimit;
}

/**
 * The value of an account's API Gateway API key, which the authorizer returns as `usageIdentifierKey`: the account's
 * id (a uuid, unique across stages). Not a secret: with apiKeySource AUTHORIZER a client's `x-api-key` is never read,
 * so only the authorizer, after it resolved the caller's own key, can name it.
 */
export const edgeKeyValue = (accountId: string) => accountId;
