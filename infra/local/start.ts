import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServiceUnavailable } from '#lib/errors.ts';
import { newSecretsKey } from '#lib/imports/credentials.ts';
import { type DynamoDbLocal, ensureTable, startDynamoDbLocal } from './dynamodb-local.ts';
import { ensureImportSecretsKey, LOCAL_DATA_DIR, localSettings, ROOT } from './environment.ts';
import {
  loadModules,
  type Modules,
  type Service,
  type Shutdown,
  shutdownOf,
  startService,
} from './services.ts';

/**
 * `npm start`: the embedded DynamoDB (data kept in .local/ unless --in-memory), the table, the demo
 * account on first start (its key printed once), the API through the local gateway, and the webhook dispatcher
 * (infra/local/webhooks.ts). Ctrl-C stops all.
 */
const DEMO_ACCOUNT_FILE = join(ROOT, 'examples', 'demo-account.json');
const DEMO_ADDRESS = 'support@demo.deskpipe.test';

/** Restarts of the embedded store allowed within RESTART_WINDOW_MS before giving up (exit 1). */
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 60_000;

/** How long the bootstrap's first store calls may keep answering 503 before npm start gives up. */
const STORE_WARM_UP_MS = 60_000;

async function whileStoreWarmsUp<T>(work: () => Promise<T>): Promise<T> {
  const until = Date.now() + STORE_WARM_UP_MS;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof ServiceUnavailable) || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

async function main(): Promise<void> {
  const settings = localSettings();
  const inMemory = process.argv.includes('--in-memory');
  const storeOptions = { port: settings.dynamoPort, ...(inMemory ? {} : { dbPath: LOCAL_DATA_DIR }) };
  let store: DynamoDbLocal | undefined;
  let endpoint = settings.externalEndpoint;
  if (!endpoint) {
    store = await startDynamoDbLocal(storeOptions);
    endpoint = store.endpoint;
  }
  const stopStore = async () => store?.stop();
  try {
    await ensureTable(endpoint, settings.tableName);
    process.env.DYNAMODB_ENDPOINT = endpoint;
    process.env.TABLE_NAME = settings.tableName;
    // Imports (docs/imports.md): the credentials' key kept in .local/, uploads beside it (in memory: a fresh folder).
    ensureImportSecretsKey(newSecretsKey);

    const modules = await loadModules();
    const demo = await demoAccount(modules);
    const service = await startService(modules, settings, endpoint, inMemory);
    printWhereItRuns(service, demo, {
      endpoint,
      tableName: settings.tableName,
      store: store ? (inMemory ? 'embedded, in memory' : `embedded, data in ${LOCAL_DATA_DIR}`) : 'external',
    });

    const shutdown = shutdownOf(service, inMemory, stopStore);
    process.on('SIGINT', () => void shutdown.run(0));
    process.on('SIGTERM', () => void shutdown.run(0));
    process.on('SIGHUP', () => void shutdown.run(0));
    if (store) {
      superviseStore(store, {
        inMemory,
        shutdown,
        restart: async () => {
          store = await startDynamoDbLocal(storeOptions);
          await ensureTable(store.endpoint, settings.tableName);
          return store;
        },
      });
    }
  } catch (error) {
    await stopStore();
    throw error;
  }
}

/** The demo account, applied on first start: its slug, and its key when it was made now (shown once). */
async function demoAccount(modules: Modules): Promise<{ slug: string; key: string | undefined }> {
  const { applyAccountFile, findAccountIdBySlug } = modules;
  const demo = JSON.parse(await readFile(DEMO_ACCOUNT_FILE, 'utf8')) as { slug: string };
  // A store that has just started (its JIT cold, the machine busy) can miss the client's time limits on its
  // first calls: those answer 503, and the bootstrap tries again rather than leave npm start dead. The apply
  // is idempotent; one whose answer was lost leaves the account without a printed key (the message says how).
  const key = await whileStoreWarmsUp(async () =>
    (await findAccountIdBySlug(demo.slug)) ? undefined : (await applyAccountFile(demo)).api_key,
  );
  return { slug: demo.slug, key };
}

function printWhereItRuns(
  service: Service,
  demo: { slug: string; key: string | undefined },
  store: { endpoint: string; tableName: string; store: string },
): void {
  const { baseUrl, mail, mailDir, relay, sentDir } = service;
  console.log(`deskpipe is listening on ${baseUrl} (API reference: ${baseUrl}/docs)`);
  console.log(
    `SMTP: smtp://127.0.0.1:${mail.port} (inbound mail; kept in ${mailDir}; demo address ${DEMO_ADDRESS})`,
  );
  console.log(
    relay
      ? `Outbound mail: SMTP relay ${relay}`
      : `Outbound mail: .eml files in ${sentDir} (SMTP_RELAY_URL unset)`,
  );
  console.log(`DynamoDB: ${store.endpoint} (${store.store}), table ${store.tableName}`);
  if (demo.key) {
    console.log(`Demo account "${demo.slug}" created. Its API key (shown once):\n\n  ${demo.key}\n`);
    console.log(`Try: curl -H "Authorization: Bearer ${demo.key}" ${baseUrl}/api/pipelines`);
  } else {
    console.log(
      `Demo account "${demo.slug}" exists. New key: npm run --silent admin -- keys create ${demo.slug}`,
    );
  }
}

/**
 * The embedded store dying is loud: with data on disk it is restarted on the same port (requests in the
 * meantime answer 503); in memory its data is gone, so the service stops with exit code 1.
 */
function superviseStore(
  first: DynamoDbLocal,
  options: { inMemory: boolean; shutdown: Shutdown; restart: () => Promise<DynamoDbLocal> },
): void {
  const { inMemory, shutdown } = options;
  const restarts: number[] = [];
  const supervise = (current: DynamoDbLocal) =>
    current.onUnexpectedExit(async (code, signal) => {
      if (shutdown.stopping()) return;
      console.error(`\n*** DynamoDB Local exited unexpectedly (${signal ?? `code ${code}`}). ***`);
      const now = Date.now();
      restarts.push(now);
      while ((restarts[0] ?? now) < now - RESTART_WINDOW_MS) restarts.shift();
      if (inMemory || restarts.length > MAX_RESTARTS) {
        console.error(
          inMemory
            ? 'Its data was in memory and is lost: stopping (exit 1).'
            : `It died ${restarts.length} times within a minute: stopping (exit 1).`,
        );
        return shutdown.run(1);
      }
      try {
        const store = await options.restart();
        console.error(
          `*** DynamoDB Local restarted on ${store.endpoint}, data kept in ${LOCAL_DATA_DIR}. ***\n`,
        );
        supervise(store);
      } catch (error) {
        console.error(`Could not restart DynamoDB Local: ${error instanceof Error ? error.message : error}`);
        await shutdown.run(1);
      }
    });
  supervise(first);
}

main().catch((error: unknown) => {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
