import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { EdgeLimits } from '#lib/accounts/edge-limits.ts';
import type { EdgeApi, UsagePlan } from './edge-keys.ts';

/**
 * The edge's control plane through the operator's AWS CLI (`aws apigateway …`, its credentials and region from the
 * environment, as every other deployed-stage step in docs/deploy.md): the project bundles no API Gateway SDK client,
 * and these calls are the admin command's only, a handful per `apply --aws`. The CLI follows pagination itself.
 */
const run = promisify(execFile);

type Json = Record<string, unknown>;

async function apigateway(...args: string[]): Promise<Json> {
  const { stdout } = await run('aws', ['apigateway', ...args, '--output', 'json']);
  return stdout.trim() === '' ? {} : (JSON.parse(stdout) as Json);
}

const itemsOf = (answer: Json) => (answer.items ?? []) as Json[];
const throttleArg = (limits: EdgeLimits) => `burstLimit=${limits.burstLimit},rateLimit=${limits.rateLimit}`;

function usagePlanOf(item: Json): UsagePlan {
  return {
    id: String(item.id),
    name: String(item.name),
    apiStages: ((item.apiStages ?? []) as Json[]).map((s) => ({
      apiId: String(s.apiId),
      stage: String(s.stage),
    })),
    throttle: item.throttle as UsagePlan['throttle'],
  };
}

export const awsCliEdgeApi: EdgeApi = {
  async findKey(name) {
    const found = itemsOf(await apigateway('get-api-keys', '--name-query', name)).find(
      (k) => k.name === name,
    );
    return found ? { id: String(found.id) } : undefined;
  },
  async createKey(name, value) {
    const created = await apigateway('create-api-key', '--name', name, '--value', value, '--enabled');
    return { id: String(created.id) };
  },
  async usagePlans() {
    return itemsOf(await apigateway('get-usage-plans')).map(usagePlanOf);
  },
  async createUsagePlan(name, limits, apiStages) {
    const stages = apiStages.map((s) => `apiId=${s.apiId},stage=${s.stage}`);
    const created = await apigateway(
      'create-usage-plan',
      '--name',
      name,
      '--throttle',
      throttleArg(limits),
      '--api-stages',
      ...stages,
    );
    return usagePlanOf(created);
  },
  async setThrottle(planId, limits) {
    await apigateway(
      'update-usage-plan',
      '--usage-plan-id',
      planId,
      '--patch-operations',
      `op=replace,path=/throttle/rateLimit,value=${limits.rateLimit}`,
      `op=replace,path=/throttle/burstLimit,value=${limits.burstLimit}`,
    );
  },
  async keysOf(planId) {
    return itemsOf(await apigateway('get-usage-plan-keys', '--usage-plan-id', planId)).map((k) =>
      String(k.id),
    );
  },
  async addKey(planId, keyId) {
    await apigateway(
      'create-usage-plan-key',
      '--usage-plan-id',
      planId,
      '--key-id',
      keyId,
      '--key-type',
      'API_KEY',
    );
  },
  async removeKey(planId, keyId) {
    await apigateway('delete-usage-plan-key', '--usage-plan-id', planId, '--key-id', keyId);
  },
};
