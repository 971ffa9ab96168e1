import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTableCommand,
} from '@aws-sdk/client-dynamodb';
import { localStoreConfig } from '#lib/data/store/local-store.ts';
import { createTableInput, streamSpecification } from '#lib/data/store/table.ts';

/**
 * AWS's DynamoDB Local, as shipped (jar and native libraries) by the registry package
 * amplify-dynamodb-simulator. One module starts it, waits until it answers, creates the table and stops it;
 * `npm start`, the test suite's global setup, the admin CLI and the benchmarks all use it.
 */
export interface DynamoDbLocal {
  endpoint: string;
  port: number;
  stop(): Promise<void>;
  /** Called once if the process ends by itself (crashed or killed), not when stop() ends it. */
  onUnexpectedExit(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void;
  /** The Java process id (tests kill it to prove the service survives its store dying). */
  pid: number | undefined;
}

export interface StartOptions {
  /** Port to listen on; 0 picks a free one. */
  port: number;
  /** Folder for the data files; omitted, the store lives in memory. */
  dbPath?: string;
  startTimeoutMs?: number;
  /**
   * The JVM's JIT: its first tier only (the default: a store that lives seconds to minutes), or `full` (C2 too) for
   * a store that serves a whole test run under steady load, where the compiled code pays its compile time back.
   */
  jit?: 'first-tier' | 'full';
}

function emulatorDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export function localClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({ ...localStoreConfig(endpoint), maxAttempts: 1 });
}

export async function startDynamoDbLocal(options: StartOptions): Promise<DynamoDbLocal> {
  const port = options.port === 0 ? await freePort() : options.port;
  const dir = emulatorDir();
  const args = [
    // The JIT's first tier only (unless `jit: 'full'`), and one GC thread: DynamoDB Local here lives for seconds to
    // minutes (a test file, a developer's session), and C2's compile threads cost more CPU than they give back in
    // that time. Measured on this 2-core machine, three api files (64 tests) took 58 s of CPU with the JVM's
    // defaults and 30-35 s with these, and 36 s of wall time against 21-27 s (docs/testing.md, "How `npm test`
    // runs"). The test run's own stores, each serving a worker's files for minutes, take `full`. A young generation of
    // 400 MB (the default here is ~120 MB) collects a third as often, and every request leaves garbage: the fault
    // sweep of faults-update took 65-69 s of CPU in three runs with the default heap, 59-71 s (63 on average) in
    // five with this one.
    ...(options.jit === 'full' ? [] : ['-XX:TieredStopAtLevel=1']),
    '-XX:+UseSerialGC',
    '-Xms800m',
    '-Xmn400m',
    `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(dir, 'DynamoDBLocal.jar'),
    '-port',
    String(port),
    '-sharedDb',
    '-disableTelemetry',
  ];
  if (options.dbPath) {
    mkdirSync(options.dbPath, { recursive: true });
    args.push('-dbPath', options.dbPath);
  } else {
    args.push('-inMemory');
  }

  // DynamoDB Local writes a metadata file into its working directory: keep it out of the repository.
  const child = spawn('java', args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: options.dbPath ?? tmpdir() });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const spawnFailure = new Promise<never>((_, reject) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'ENOENT'
          ? new Error(
              'Java 17 or newer is needed to run DynamoDB Local: install the Debian package openjdk-17-jre-headless.',
            )
          : error,
      );
    });
    child.once('exit', (code) => {
      reject(new Error(`DynamoDB Local exited with code ${code} before it was ready:\n${output.trim()}`));
    });
  });
  spawnFailure.catch(() => {});

  const stopOnExit = () => child.kill('SIGKILL');
  process.once('exit', stopOnExit);
  const endpoint = `http://127.0.0.1:${port}`;
  let stopping = false;
  const instance: DynamoDbLocal = {
    endpoint,
    port,
    pid: child.pid,
    stop: () => {
      stopping = true;
      process.removeListener('exit', stopOnExit);
      return stopProcess(child);
    },
    onUnexpectedExit: (listener) => {
      child.once('exit', (code, signal) => {
        if (!stopping) listener(code, signal);
      });
    },
  };
  try {
    await Promise.race([waitUntilReady(endpoint, options.startTimeoutMs ?? 30_000), spawnFailure]);
  } catch (error) {
    await instance.stop();
    throw error;
  }
  return instance;
}

async function waitUntilReady(endpoint: string, timeoutMs: number): Promise<void> {
  const client = localClient(endpoint);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`DynamoDB Local did not answer at ${endpoint}: ${String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    client.destroy();
  }
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Creates the table from the one declaration in lib/data/store/table.ts unless it exists. A table kept from before the
 * declaration had its stream (data in .local/) gets it turned on: the webhook dispatcher reads it.
 */
export async function ensureTable(
  endpoint: string,
  tableName: string,
): Promise<'created' | 'exists' | 'stream enabled'> {
  const client = localClient(endpoint);
  try {
    try {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
      const stream = Table?.StreamSpecification;
      if (stream?.StreamEnabled && stream.StreamViewType === streamSpecification.StreamViewType)
        return 'exists';
      if (stream?.StreamEnabled) {
        // Another view type: a stream's view cannot change in place, so off, then on with the declared one.
        await client.send(
          new UpdateTableCommand({ TableName: tableName, StreamSpecification: { StreamEnabled: false } }),
        );
      }
      await client.send(
        new UpdateTableCommand({ TableName: tableName, StreamSpecification: streamSpecification }),
      );
      return 'stream enabled';
    } catch (error) {
      if ((error as Error).name !== 'ResourceNotFoundException') throw error;
    }
    await client.send(new CreateTableCommand(createTableInput(tableName)));
    return 'created';
  } finally {
    client.destroy();
  }
}

/** True when something answers as DynamoDB at the endpoint. */
export async function isReachable(endpoint: string): Promise<boolean> {
  const client = localClient(endpoint);
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }));
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}
