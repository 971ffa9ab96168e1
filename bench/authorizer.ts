import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { ROOT } from '#infra/local/environment.ts';
import { log } from './lib/measure.ts';
import { percentile, round } from './lib/stats.ts';

/**
 * `npm run bench -- --authorizer [--root DIR] [--keys N]`: what the API key authorizer costs on an API Gateway
 * cache miss (every call here is one: the gateway's cache is not in the way), as store calls, round trips
 * (waves of calls one after another) and latency, for the code under DIR (default: this checkout), so the same
 * bench measures another checkout (`--root /work/before`) on the same machine and store. Three cases:
 * - first use: each of N keys once (its last use is written),
 * - again: each key again at once (nothing to write),
 * - not a key: a token of the key's shape that is not one (unknown key before; a failed checksum now).
 * Writes bench/runs/results-authorizer.json (or -before.json for another root).
 */
type Authorizer = (event: APIGatewayTokenAuthorizerEvent) => Promise<APIGatewayAuthorizerResult>;

const importFrom = async <T>(root: string, path: string) =>
  (await import(pathToFileURL(join(root, path)).href)) as T;

interface Case {
  decisions: number;
  /** Store calls per decision (mean), the last-use write included whether or not the answer waited for it. */
  callsPerDecision: number;
  /** Round trips per decision (median): waves of store calls, a wave being calls in flight together. */
  roundTrips: number;
  /** Writes per decision (mean). */
  writesPerDecision: number;
  p50Ms: number;
  p95Ms: number;
}

export async function runAuthorizerOnly(options: { root?: string; keys?: number }) {
  const root = resolve(options.root ?? ROOT);
  const keys = options.keys ?? 200;
  const { dynamo } = await importFrom<{ dynamo: DynamoDBDocumentClient }>(root, 'lib/data/store/client.ts');
  const { applyAccountFile } = await importFrom<{
    applyAccountFile: (file: unknown) => Promise<{ api_key?: string }>;
  }>(root, 'lib/accounts/apply-account.ts');
  const { handler } = await importFrom<{ handler: Authorizer }>(root, 'functions/authorizer.ts');

  // Every store call, and the waves they come in.
  let inFlight = 0;
  let calls = 0;
  let writes = 0;
  let waves = 0;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      calls++;
      if (/^(Put|Update|Delete|TransactWrite)/.test(String(context.commandName))) writes++;
      if (inFlight === 0) waves++;
      inFlight++;
      try {
        return await next(args);
      } finally {
        inFlight--;
      }
    },
    { step: 'initialize', name: 'benchAuthorizerCalls' },
  );
  const settled = async () => {
    while (inFlight > 0) await new Promise((r) => setTimeout(r, 1));
  };

  log(`authorizer bench: ${keys} keys of the code in ${root}`);
  const tokens: string[] = [];
  for (let i = 0; i < keys; i++) {
    const state = await applyAccountFile({
      slug: `bench-auth-${randomBytes(5).toString('hex')}`,
      name: 'B',
      plan: 'pro',
    });
    if (!state.api_key) throw new Error('apply made no key');
    tokens.push(state.api_key);
  }

  const measure = async (label: string, list: string[]): Promise<Case> => {
    const ms: number[] = [];
    const rounds: number[] = [];
    const before = { calls, writes };
    for (const token of list) {
      await settled();
      const wavesBefore = waves;
      const event = {
        type: 'TOKEN' as const,
        authorizationToken: `Bearer ${token}`,
        methodArn: 'arn:aws:execute-api:eu-west-1:1:api/bench/GET/api/tickets',
      };
      const start = performance.now();
      await handler(event).catch(() => undefined);
      ms.push(performance.now() - start);
      // The last-use write, when not waited for, still belongs to this decision's cost.
      await settled();
      rounds.push(waves - wavesBefore);
    }
    ms.sort((a, b) => a - b);
    rounds.sort((a, b) => a - b);
    const result: Case = {
      decisions: list.length,
      callsPerDecision: round((calls - before.calls) / list.length),
      roundTrips: percentile(rounds, 50),
      writesPerDecision: round((writes - before.writes) / list.length),
      p50Ms: round(percentile(ms, 50)),
      p95Ms: round(percentile(ms, 95)),
    };
    log(`  ${label.padEnd(12)} ${JSON.stringify(result)}`);
    return result;
  };

  const notKeys = tokens.map((t) => {
    // Same shape, one character changed: before, an unknown key; now, a failed checksum.
    const i = t.length - 10;
    return t.slice(0, i) + (t[i] === 'a' ? 'b' : 'a') + t.slice(i + 1);
  });
  const results = {
    root,
    keys,
    firstUse: await measure('first use', tokens),
    again: await measure('again', tokens),
    notAKey: await measure('not a key', notKeys),
    ...(root === ROOT ? { keyWrites: await measureKeyWrites(() => ({ calls, writes })) } : {}),
  };
  const dir = join(ROOT, 'bench', 'runs');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, root === ROOT ? 'results-authorizer.json' : 'results-authorizer-before.json');
  writeFileSync(file, `${JSON.stringify({ startedAt: new Date().toISOString(), ...results }, null, 2)}\n`);
  log(`wrote ${file}`);
}

/**
 * What the key routes write (this checkout only): store calls and writes of a create, a rotation and a
 * revocation on an account with 20 keys, and the size of each item they write (docs/capacity.md quotes them).
 */
async function measureKeyWrites(counts: () => { calls: number; writes: number }) {
  const { createKey, rotateKey } = await import('#lib/accounts/key-making.ts');
  const { revokeKey } = await import('#lib/accounts/key-management.ts');
  const { getItem } = await import('#lib/data/store/client.ts');
  const { apiKeyKeys } = await import('#lib/data/keys.ts');
  const { findApiKeyById } = await import('#lib/data/api-keys/records.ts');
  const { itemBytes } = await import('#test/support/dynamo-figures.ts');
  const { applyAccountFile } = await import('#lib/accounts/apply-account.ts');
  const state = await applyAccountFile({
    slug: `bench-keys-${randomBytes(5).toString('hex')}`,
    name: 'K',
    plan: 'pro',
  });
  const accountId = state.account.id;
  for (let i = 0; i < 19; i++)
    await createKey(accountId, { name: `key ${i}`, scopes: ['tickets:read', 'deals:write'] });
  const cost = async <T>(work: () => Promise<T>) => {
    const before = counts();
    const result = await work();
    const after = counts();
    return { result, calls: after.calls - before.calls, writes: after.writes - before.writes };
  };
  const create = await cost(() =>
    createKey(accountId, {
      name: 'Nightly export to the warehouse',
      scopes: ['tickets:read', 'deals:read', 'contacts:read'],
    }),
  );
  const record = await findApiKeyById(create.result.id);
  if (!record) throw new Error('no record');
  const sizes = {
    lookup: itemBytes((await getItem(apiKeyKeys.lookup(record.hash))) ?? {}),
    record: itemBytes((await getItem(apiKeyKeys.record(accountId, record.id))) ?? {}),
    keySet: itemBytes((await getItem(apiKeyKeys.guard(accountId))) ?? {}),
  };
  // Rotated as a caller holding every scope, with no expiry to bound the successor's, would rotate it.
  const rotate = await cost(() => rotateKey({ accountId, keyId: record.id, scopes: '*' }, record.id, 3600));
  const revoke = await cost(() => revokeKey(accountId, rotate.result.id));
  const figures = {
    itemBytes: sizes,
    create: { calls: create.calls, writeRequests: create.writes },
    rotate: { calls: rotate.calls, writeRequests: rotate.writes },
    revoke: { calls: revoke.calls, writeRequests: revoke.writes },
  };
  log(`  key writes   ${JSON.stringify(figures)}`);
  return figures;
}
