import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type DynamoDbLocal, ensureTable, startDynamoDbLocal } from './dynamodb-local.ts';
import { LOCAL_DATA_DIR, localSettings, ROOT } from './environment.ts';

/**
 * `npm start`: the embedded DynamoDB (data kept in .local/ unless --in-memory), the table, the demo
 * account on first start (its key printed once), and the API through the local gateway. Ctrl-C stops all.
 */
const DEMO_ACCOUNT_FILE = join(ROOT, 'examples', 'demo-account.json');

async function main(): Promise<void> {
  const settings = localSettings();
  const inMemory = process.argv.includes('--in-memory');
  let store: DynamoDbLocal | undefined;
  let endpoint = settings.externalEndpoint;
  if (!endpoint) {
    store = await startDynamoDbLocal({
      port: settings.dynamoPort,
      ...(inMemory ? {} : { dbPath: LOCAL_DATA_DIR }),
    });
    endpoint = store.endpoint;
  }
  const stopStore = async () => store?.stop();
  try {
    await ensureTable(endpoint, settings.tableName);
    process.env.DYNAMODB_ENDPOINT = endpoint;
    process.env.TABLE_NAME = settings.tableName;

    // Loaded once the environment is set: the data layer's client reads it when its module loads.
    const [{ applyAccountFile }, { findAccountIdBySlug }, { LocalGateway }] = await Promise.all([
      import('#lib/accounts/apply-account.ts'),
      import('#lib/data/accounts.ts'),
      import('./gateway.ts'),
    ]);
    const demo = JSON.parse(await readFile(DEMO_ACCOUNT_FILE, 'utf8')) as { slug: string };
    let demoKey: string | undefined;
    if (!(await findAccountIdBySlug(demo.slug))) {
      demoKey = (await applyAccountFile(demo)).api_key;
    }

    const gateway = new LocalGateway({ authCacheTtlSeconds: settings.authCacheTtlSeconds, root: ROOT });
    await gateway.warm();
    const server = await gateway.listen(settings.port);
    const baseUrl = `http://127.0.0.1:${settings.port}`;

    console.log(`deskpipe is listening on ${baseUrl}`);
    console.log(
      `DynamoDB: ${endpoint} (${store ? (inMemory ? 'embedded, in memory' : `embedded, data in ${LOCAL_DATA_DIR}`) : 'external'}), table ${settings.tableName}`,
    );
    if (demoKey) {
      console.log(`Demo account "${demo.slug}" created. Its API key (shown once):\n\n  ${demoKey}\n`);
      console.log(`Try: curl -H "Authorization: Bearer ${demoKey}" ${baseUrl}/api/pipelines`);
    } else {
      console.log(
        `Demo account "${demo.slug}" exists. New key: npm run --silent admin -- keys create ${demo.slug}`,
      );
    }

    let stopping = false;
    const shutdown = async () => {
      if (stopping) return;
      stopping = true;
      console.log('Stopping...');
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await stopStore();
      process.exit(0);
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
  } catch (error) {
    await stopStore();
    throw error;
  }
}

main().catch((error: unknown) => {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
