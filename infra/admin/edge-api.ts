import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanCommand,
  CreateUsagePlanKeyCommand,
  DeleteUsagePlanKeyCommand,
  paginateGetApiKeys,
  paginateGetUsagePlanKeys,
  paginateGetUsagePlans,
  type UsagePlan as SdkUsagePlan,
  UpdateUsagePlanCommand,
} from '@aws-sdk/client-api-gateway';
import type { EdgeLimits } from '#lib/accounts/edge-limits.ts';
import type { EdgeApi, UsagePlan } from './edge-keys.ts';

/**
 * The edge's control plane through API Gateway's SDK client (credentials and region from the environment, as every
 * other deployed-stage step in docs/deploy.md): a handful of calls per `apply --aws`, each list read to its end.
 */
let client: APIGatewayClient | undefined;
const gateway = () => {
  client ??= new APIGatewayClient({});
  return client;
};

function usagePlanOf(item: SdkUsagePlan): UsagePlan {
  return {
    id: String(item.id),
    name: String(item.name),
    apiStages: (item.apiStages ?? []).map((s) => ({ apiId: String(s.apiId), stage: String(s.stage) })),
    throttle: item.throttle as UsagePlan['throttle'],
  };
}

const throttleOf = (limits: EdgeLimits) => ({ burstLimit: limits.burstLimit, rateLimit: limits.rateLimit });

export const sdkEdgeApi: EdgeApi = {
  async findKey(name) {
    for await (const page of paginateGetApiKeys({ client: gateway() }, { nameQuery: name }))
      for (const key of page.items ?? []) if (key.name === name) return { id: String(key.id) };
    return undefined;
  },
  async createKey(name, value) {
    const created = await gateway().send(new CreateApiKeyCommand({ name, value, enabled: true }));
    return { id: String(created.id) };
  },
  async usagePlans() {
    const plans: UsagePlan[] = [];
    for await (const page of paginateGetUsagePlans({ client: gateway() }, {}))
      plans.push(...(page.items ?? []).map(usagePlanOf));
    return plans;
  },
  async createUsagePlan(name, limits, apiStages) {
    const created = await gateway().send(
      new CreateUsagePlanCommand({ name, throttle: throttleOf(limits), apiStages }),
    );
    return usagePlanOf(created);
  },
  async setThrottle(planId, limits) {
    await gateway().send(
      new UpdateUsagePlanCommand({
        usagePlanId: planId,
        patchOperations: [
          { op: 'replace', path: '/throttle/rateLimit', value: String(limits.rateLimit) },
          { op: 'replace', path: '/throttle/burstLimit', value: String(limits.burstLimit) },
        ],
      }),
    );
  },
  async keysOf(planId) {
    const ids: string[] = [];
    for await (const page of paginateGetUsagePlanKeys({ client: gateway() }, { usagePlanId: planId }))
      ids.push(...(page.items ?? []).map((k) => String(k.id)));
    return ids;
  },
  async addKey(planId, keyId) {
    await gateway().send(new CreateUsagePlanKeyCommand({ usagePlanId: planId, keyId, keyType: 'API_KEY' }));
  },
  async removeKey(planId, keyId) {
    await gateway().send(new DeleteUsagePlanKeyCommand({ usagePlanId: planId, keyId }));
  },
};
