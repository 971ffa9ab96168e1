import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceUnavailable } from '#lib/errors.ts';
import { type DynamoDbLocal, ensureTable, startDynamoDbLocal } from './dynamodb-local.ts';
import { LOCAL_DATA_DIR, LOCAL_MAIL_DIR, localSettings, ROOT } from './environment.ts';

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

    // Loaded once the environment is set: the data layer's client reads it when its module loads.
    const [
      { applyAccountFile },
      { findAccountIdBySlug },
      { LocalGateway },
      { startWebhookDispatcher },
      { runBreaches },
      { startMailServer },
      { runPurges },
      { runOutbox },
      { folderSender, smtpSender },
      { runErasures },
      { folderMailEraser },
    ] = await Promise.all([
      import('#lib/accounts/apply-account.ts'),
      import('#lib/data/accounts.ts'),
      import('./gateway.ts'),
      import('./webhooks.ts'),
      import('#lib/tickets/breaches.ts'),
      import('./mail.ts'),
      import('#lib/trash/purge.ts'),
      import('#lib/email/outbox.ts'),
      import('#lib/email/senders.ts'),
      import('#lib/erasures/runner.ts'),
      import('#lib/data/mail-store.ts'),
    ]);
    const demo = JSON.parse(await readFile(DEMO_ACCOUNT_FILE, 'utf8')) as { slug: string };
    // A store that has just started (its JIT cold, the machine busy) can miss the client's time limits on its
    // first calls: those answer 503, and the bootstrap tries again rather than leave npm start dead. The apply
    // is idempotent; one whose answer was lost leaves the account without a printed key (the message says how).
    const demoKey = await whileStoreWarmsUp(async () =>
      (await findAccountIdBySlug(demo.slug)) ? undefined : (await applyAccountFile(demo)).api_key,
    );

    const baseUrl = `http://127.0.0.1:${settings.port}`;
    const gateway = new LocalGateway({
      authCacheTtlSeconds: settings.authCacheTtlSeconds,
      root: ROOT,
      baseUrl,
    });
    await gateway.warm();
    const server = await gateway.listen(settings.port);
    // Webhooks: the table's stream fanned out to endpoints, and the deliveries due, as the deployed functions do.
    const dispatcher = await startWebhookDispatcher({ endpoint, tableName: settings.tableName });
    // Service-level breaches on time (docs/sla.md): the breach runner, as the deployed function runs it, for as
    // long as npm start runs (a failed pass is logged and tried again: the due entries stay).
    let breachesStopped = false;
    const breaches = runBreaches(Number.POSITIVE_INFINITY, { stopped: () => breachesStopped });

    // Inbound mail (docs/email.md): 250 only once each account's copy of the raw mail is kept, then the one
    // inbound handler.
    const mailDir = inMemory ? await mkdtemp(join(tmpdir(), 'deskpipe-mail-')) : LOCAL_MAIL_DIR;
    const mail = await startMailServer({ port: settings.smtpPort, dir: mailDir });
    // The trash's purge (docs/decisions.md): what is past its purge time, found by its due entry, once a minute,
    // with its mail's files in the mail folder.
    const purges = runPurges(Number.POSITIVE_INFINITY, {
      stopped: () => breachesStopped,
      mail: folderMailEraser(mailDir),
    });
    // Outbound mail (docs/email.md, "Sending"): the outbox runner, as the deployed function runs it, to the relay
    // SMTP_RELAY_URL names, or to .eml files in a folder when it is unset.
    const relay = process.env.SMTP_RELAY_URL?.trim();
    const sentDir = join(mailDir, 'sent');
    const sender = relay ? smtpSender(relay) : folderSender(sentDir);
    // One runner per data folder, named after it: after a crash, it takes back at once what it had claimed.
    const outbox = runOutbox(Number.POSITIVE_INFINITY, {
      sender,
      owner: `npm-start:${mailDir}`,
      stopped: () => breachesStopped,
    });
    // The download routes read raw mail and attachments from the same folder (lib/data/mail-store.ts).
    process.env.MAIL_DIR = mailDir;
    // Erasures (docs/decisions.md, "Erasing a person"): the running ones, found by their due entry, a bounded step at a time.
    const erasures = runErasures(Number.POSITIVE_INFINITY, {
      stopped: () => breachesStopped,
      mail: folderMailEraser(mailDir),
    });

    console.log(`deskpipe is listening on ${baseUrl} (API reference: ${baseUrl}/docs)`);
    console.log(
      `SMTP: smtp://127.0.0.1:${mail.port} (inbound mail; kept in ${mailDir}; demo address ${DEMO_ADDRESS})`,
    );
    console.log(
      relay
        ? `Outbound mail: SMTP relay ${relay}`
        : `Outbound mail: .eml files in ${sentDir} (SMTP_RELAY_URL unset)`,
    );
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
    const shutdown = async (code: number) => {
      if (stopping) return;
      stopping = true;
      console.log('Stopping...');
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      // Mail still being processed stays pending on disk and is processed after a restart.
      await mail.stop();
      if (inMemory) await rm(mailDir, { recursive: true, force: true });
      // Attempts still running get a moment; any cut short stays pending and is retried after a restart.
      await dispatcher.stop();
      breachesStopped = true;
      await Promise.all([breaches, purges, outbox, erasures]);
      sender.close();
      await stopStore();
      process.exit(code);
    };
    process.on('SIGINT', () => void shutdown(0));
    process.on('SIGTERM', () => void shutdown(0));
    process.on('SIGHUP', () => void shutdown(0));

    // The embedded store dying is loud: with data on disk it is restarted on the same port (requests in the
    // meantime answer 503); in memory its data is gone, so the service stops with exit code 1.
    const restarts: number[] = [];
    const supervise = (current: DynamoDbLocal) =>
      current.onUnexpectedExit(async (code, signal) => {
        if (stopping) return;
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
          return shutdown(1);
        }
        try {
          store = await startDynamoDbLocal(storeOptions);
          await ensureTable(store.endpoint, settings.tableName);
          console.error(
            `*** DynamoDB Local restarted on ${store.endpoint}, data kept in ${LOCAL_DATA_DIR}. ***\n`,
          );
          supervise(store);
        } catch (error) {
          console.error(
            `Could not restart DynamoDB Local: ${error instanceof Error ? error.message : error}`,
          );
          await shutdown(1);
        }
      });
    if (store) supervise(store);
  } catch (error) {
    await stopStore();
    throw error;
  }
}

main().catch((error: unknown) => {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
