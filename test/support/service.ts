import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { freePort, localClient } from '#infra/local/dynamodb-local.ts';
import { ROOT } from '#infra/local/environment.ts';
import { KEY_REGEX } from '#lib/accounts/key-format.ts';
import { waitFor } from './wait.ts';

/**
 * `npm start` (infra/local/start.ts) as a child process on free ports, its output kept, for the system tests that
 * kill or stall its embedded DynamoDB. Resolves once it has printed the demo account's key (`apiKey`; '' when the
 * account existed already: a start on kept data).
 */
export interface Service {
  child: ChildProcess;
  port: number;
  dynamoPort: number;
  /** The inbound SMTP server's port (SMTP_PORT, unless `env` sets it). */
  smtpPort: number;
  baseUrl: string;
  apiKey: string;
  env: NodeJS.ProcessEnv;
  stdout(): string;
  stderr(): string;
  /** Its exit status and the end of its output: what a test's failed wait prints (WaitOptions.context). */
  tail(): string;
  /**
   * Stops it as Ctrl-C would (SIGTERM: tsx passes it on, and the service stops its store); SIGKILL only to a
   * wrapper that did not exit in time. A SIGKILL first would orphan the service and its Java store.
   */
  stop(): Promise<void>;
}

/**
 * How long startService waits for `npm start` to come up: on a fresh-clone CI run's 2 busy cores a start took more
 * than a minute once. A `beforeAll` that starts a service takes this and more (SERVICE_START_HOOK_MS), so that a slow
 * start either comes up or fails with the service's output, not with the hook's bare timeout.
 */
export const SERVICE_START_MS = 120_000;
export const SERVICE_START_HOOK_MS = SERVICE_START_MS + 15_000;

export async function startService(env: Record<string, string>, args: string[] = []): Promise<Service> {
  const [port, dynamoPort, smtpPort] = [await freePort(), await freePort(), await freePort()];
  // As a developer runs it: its own embedded store, the deployed store timeout (not the in-process tests' generous
  // one: a service test stalls or kills its store on purpose) and the deployed authorizer cache, unless `env` says
  // otherwise.
  const inherited: NodeJS.ProcessEnv = { ...process.env };
  delete inherited.DYNAMODB_ENDPOINT;
  delete inherited.DYNAMODB_REQUEST_TIMEOUT_MS;
  delete inherited.DYNAMODB_CONNECT_TIMEOUT_MS;
  delete inherited.AUTH_CACHE_TTL_SECONDS;
  const childEnv: NodeJS.ProcessEnv = {
    ...inherited,
    PORT: String(port),
    DYNAMODB_PORT: String(dynamoPort),
    SMTP_PORT: String(smtpPort),
    ...env,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/start.ts', ...args], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c) => {
    stdout += c;
  });
  child.stderr?.on('data', (c) => {
    stderr += c;
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 20_000).unref());
    if ((await Promise.race([exited, timer])) === 'late') {
      console.log(`npm start had not exited 20 s after SIGTERM; its output ends:\n${stdout.slice(-2000)}`);
      child.kill('SIGKILL');
    }
  };
  const service = {
    child,
    stop,
    port,
    dynamoPort,
    smtpPort: Number(childEnv.SMTP_PORT),
    baseUrl: `http://127.0.0.1:${port}`,
    env: childEnv,
    stdout: () => stdout,
    stderr: () => stderr,
    tail: () =>
      `npm start ${child.exitCode === null && child.signalCode === null ? 'running' : `exited (${child.exitCode ?? child.signalCode})`}; ` +
      `its stdout ends:\n${stdout.slice(-1500)}\nits stderr ends:\n${stderr.slice(-3000)}`,
  };
  // A first start prints the demo account's new key; a start on kept data (its account exists) prints none. Only
  // a whole key (KEY_REGEX: its 46 characters): the output arrives in chunks, and one may end inside the key (at
  // LOG_LEVEL=DEBUG, in a fresh-clone CI run, the test then sent half a key and met a 401).
  const apiKey = await waitFor(
    () => KEY_REGEX.exec(stdout)?.[0] ?? (/Demo account "[^"]+" exists/.test(stdout) ? '' : undefined),
    { timeout: SERVICE_START_MS, label: 'the demo account', context: service.tail },
  );
  return { ...service, apiKey };
}

/** The process ids of the DynamoDB Local serving this port (to kill or stop it). */
export function javaPids(port: number): number[] {
  try {
    return execFileSync('pgrep', ['-f', `DynamoDBLocal.jar -port ${port} `], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * DynamoDB Local answers a TransactWriteItems before its SQLite COMMIT has run (SQLiteDBAccess.commitTransaction
 * queues the COMMIT job without waiting for it; a PutItem or BatchWriteItem waits for its job), so a store that
 * exits just after the answer loses the whole acknowledged transaction: a SIGKILL within ~50 ms of it, and a SIGTERM
 * too (the jar registers no shutdown hook that drains the queue: a direct trial under load lost the transaction
 * acknowledged just before a SIGTERM). Its job queue runs in order: once a read sent later has been answered,
 * every transaction acknowledged before that read was sent is on disk. A test that stops or kills a store and holds
 * the data to what was acknowledged sends this first.
 */
export async function storeBarrier(dynamoPort: number, tableName: string): Promise<void> {
  const client = localClient(`http://127.0.0.1:${dynamoPort}`);
  try {
    await client.send(
      new GetItemCommand({
        TableName: tableName,
        Key: { pk: { S: 'store-barrier' }, sk: { S: 'store-barrier' } },
        ConsistentRead: true,
      }),
    );
  } finally {
    client.destroy();
  }
}

/**
 * Kills a service started here (not only its tsx wrapper, which would leave it running): SIGKILL, its own work cut off
 * as a power cut would. Its store, a child of the service too, is left running: DynamoDB does not lose what it
 * acknowledged, and a killed DynamoDB Local can (storeBarrier), so a test stops or kills the store after a barrier.
 */
export function killService(service: Service): void {
  const wrapper = service.child.pid ?? 0;
  const store = new Set(javaPids(service.dynamoPort));
  const children = execFileSync('pgrep', ['-P', String(wrapper)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => !store.has(pid));
  for (const pid of [...children, wrapper]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
}
