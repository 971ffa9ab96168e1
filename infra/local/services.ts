import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCAL_IMPORTS_DIR, LOCAL_MAIL_DIR, type localSettings, ROOT } from './environment.ts';

/**
 * What `npm start` runs beside the store (infra/local/start.ts): the API through the local gateway, the webhook
 * dispatcher, mail in and out, and the runners the deployed stack schedules; and how they stop, in order.
 */

type Settings = ReturnType<typeof localSettings>;

/** The service's modules, loaded once the environment is set: the data layer's client reads it when it loads. */
export async function loadModules() {
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
    { runClearings },
    { runQueue },
    { runImports },
    { environmentSealer },
  ] = await Promise.all([
    import('#lib/accounts/apply-account.ts'),
    import('#lib/data/accounts/accounts.ts'),
    import('./gateway.ts'),
    import('./webhooks.ts'),
    import('#lib/tickets/breaches.ts'),
    import('./mail.ts'),
    import('#lib/trash/purge.ts'),
    import('#lib/email/outbox.ts'),
    import('#lib/email/senders.ts'),
    import('#lib/erasures/runner.ts'),
    import('#lib/data/mail-store.ts'),
    import('#lib/organizations/clearing-runner.ts'),
    import('#lib/tickets/queue-runner.ts'),
    import('#lib/imports/runner.ts'),
    import('#lib/imports/sealers.ts'),
  ]);
  return {
    ...{ applyAccountFile, findAccountIdBySlug, LocalGateway, startWebhookDispatcher, runBreaches },
    ...{ startMailServer, runPurges, runOutbox, folderSender, smtpSender, runErasures, folderMailEraser },
    runClearings,
    runQueue,
    runImports,
    environmentSealer,
  };
}
export type Modules = Awaited<ReturnType<typeof loadModules>>;

/** What npm start runs once the store is there: the API, the webhooks, mail both ways and the runners. */
export interface Service {
  baseUrl: string;
  server: Server;
  dispatcher: { stop(): Promise<void> };
  mail: { port: number; stop(): Promise<void> };
  mailDir: string;
  relay: string | undefined;
  sentDir: string;
  sender: { close(): void };
  /** The runners' loops, which end once `stopRunners` was called. */
  runners: Promise<unknown>[];
  stopRunners(): void;
}

export async function startService(
  modules: Modules,
  settings: Settings,
  endpoint: string,
  inMemory: boolean,
): Promise<Service> {
  const baseUrl = `http://127.0.0.1:${settings.port}`;
  const gateway = new modules.LocalGateway({
    authCacheTtlSeconds: settings.authCacheTtlSeconds,
    root: ROOT,
    baseUrl,
  });
  await gateway.warm();
  const server = await gateway.listen(settings.port);
  // Webhooks: the table's stream fanned out to endpoints, and the deliveries due, as the deployed functions do.
  const dispatcher = await modules.startWebhookDispatcher({ endpoint, tableName: settings.tableName });
  // Service-level breaches on time (docs/sla.md): the breach runner, as the deployed function runs it, for as
  // long as npm start runs (a failed pass is logged and tried again: the due entries stay).
  let runnersStopped = false;
  const stopped = () => runnersStopped;
  const breaches = modules.runBreaches(Number.POSITIVE_INFINITY, { stopped });

  // Inbound mail (docs/email.md): 250 only once each account's copy of the raw mail is kept, then the one
  // inbound handler.
  const mailDir = inMemory ? await mkdtemp(join(tmpdir(), 'deskpipe-mail-')) : LOCAL_MAIL_DIR;
  const mail = await modules.startMailServer({ port: settings.smtpPort, dir: mailDir });
  // The trash's purge (docs/decisions.md): what is past its purge time, found by its due entry, once a minute,
  // with its mail's files in the mail folder.
  const purges = modules.runPurges(Number.POSITIVE_INFINITY, {
    stopped,
    mail: modules.folderMailEraser(mailDir),
  });
  // Outbound mail (docs/email.md, "Sending"): the outbox runner, as the deployed function runs it, to the relay
  // SMTP_RELAY_URL names, or to .eml files in a folder when it is unset.
  const relay = process.env.SMTP_RELAY_URL?.trim();
  const sentDir = join(mailDir, 'sent');
  const sender = relay ? modules.smtpSender(relay) : modules.folderSender(sentDir);
  // One runner per data folder, named after it: after a crash, it takes back at once what it had claimed.
  const outbox = modules.runOutbox(Number.POSITIVE_INFINITY, {
    sender,
    owner: `npm-start:${mailDir}`,
    stopped,
  });
  // The download routes read raw mail and attachments from the same folder (lib/data/mail-store.ts).
  process.env.MAIL_DIR = mailDir;
  // Erasures (docs/decisions.md, "Erasing a person"): the running ones, found by their due entry, a bounded step at a time.
  const erasures = modules.runErasures(Number.POSITIVE_INFINITY, {
    stopped,
    mail: modules.folderMailEraser(mailDir),
  });
  // The people follow-ups (docs/decisions.md, "People"): deleted organizations cleared from their tickets and
  // contacts, retired agents' and team leavers' open tickets handed back, a bounded step at a time.
  const clearings = modules.runClearings(Number.POSITIVE_INFINITY, { stopped });
  // The queue (docs/decisions.md, "The queue"): an agent who frees up takes the queue's next tickets.
  const queue = modules.runQueue(Number.POSITIVE_INFINITY, { stopped });
  // Imports (docs/imports.md, "The runner"): due jobs a page at a time; uploads in the imports folder. One runner
  // named after that folder: after a crash it takes its own leases back at once. Credentials open under the file
  // key (the Sealer the environment names: IMPORT_SECRETS_KEY, made in the imports folder).
  const importsDir = inMemory ? await mkdtemp(join(tmpdir(), 'deskpipe-imports-')) : LOCAL_IMPORTS_DIR;
  process.env.IMPORT_UPLOAD_DIR = join(importsDir, 'uploads');
  const imports = modules.runImports(Number.POSITIVE_INFINITY, {
    stopped,
    owner: `npm-start:${importsDir}`,
    sealer: modules.environmentSealer(),
  });
  return {
    ...{ baseUrl, server, dispatcher, mail, mailDir, relay, sentDir, sender },
    runners: [breaches, purges, outbox, erasures, clearings, queue, imports],
    stopRunners: () => {
      runnersStopped = true;
    },
  };
}

export interface Shutdown {
  run(code: number): Promise<void>;
  stopping(): boolean;
}

/**
 * How long the service's own parts get to stop before the store is stopped regardless: a part that hangs (an
 * attempt on a stalled connection, a runner inside a retried store call) must not leave DynamoDB Local running
 * after the process that started it. Shorter than the test helper's patience (test/support/service.ts, 20 s).
 */
export const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Stops everything once, in order, then exits with `code`. The store is stopped last and always: after the other
 * parts, or when they have not stopped within `graceMs` (the part still stopping is printed).
 */
export function shutdownOf(
  service: Service,
  inMemory: boolean,
  stopStore: () => Promise<void>,
  graceMs = SHUTDOWN_GRACE_MS,
): Shutdown {
  let stopping = false;
  return {
    stopping: () => stopping,
    async run(code) {
      if (stopping) return;
      stopping = true;
      console.log('Stopping...');
      let part = 'the API';
      const parts = async () => {
        service.server.closeAllConnections();
        await new Promise((resolve) => service.server.close(resolve));
        // Mail still being processed stays pending on disk and is processed after a restart.
        part = 'inbound mail';
        await service.mail.stop();
        if (inMemory) await rm(service.mailDir, { recursive: true, force: true });
        // Attempts still running get a moment; any cut short stays pending and is retried after a restart.
        part = 'the webhook dispatcher';
        await service.dispatcher.stop();
        part = 'the runners';
        service.stopRunners();
        await Promise.all(service.runners);
        service.sender.close();
      };
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), graceMs);
      });
      const stopped = parts().then(
        () => 'stopped' as const,
        (error: unknown) => {
          console.error(`Stopping ${part} failed:`, error);
          return 'failed' as const;
        },
      );
      const ended = await Promise.race([stopped, late]);
      clearTimeout(timer);
      if (ended === 'late')
        console.log(`Stopping ${part} took over ${graceMs} ms: stopping the store anyway.`);
      await stopStore();
      process.exit(code);
    },
  };
}
