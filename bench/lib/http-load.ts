import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Load through the local gateway over HTTP: the gateway runs in its own process (so its peak RSS is its own),
 * autocannon drives it with 16 connections, and the figures come from autocannon's JSON report.
 */
export interface HttpLoad {
  name: string;
  connections: number;
  seconds: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** How many answers had each status (so a non-2xx count says what it was). */
  statuses?: Record<string, number>;
}

export async function startServer(root: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/serve.ts')], {
    cwd: root,
    env: { ...process.env, ...env, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      const match = /ready (\d+)/.exec(chunk.toString());
      if (match) resolve(Number(match[1]));
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    /** Peak resident set size of the server process so far (VmHWM), MB. */
    peakRssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export async function load(
  root: string,
  name: string,
  url: string,
  options: {
    method?: string;
    body?: string;
    headers: Record<string, string>;
    seconds: number;
    connections: number;
  },
): Promise<HttpLoad> {
  const args = [
    '-c',
    String(options.connections),
    '-d',
    String(options.seconds),
    '-j',
    '-m',
    options.method ?? 'GET',
  ];
  for (const [k, v] of Object.entries(options.headers)) args.push('-H', `${k}: ${v}`);
  if (options.body) args.push('-b', options.body);
  args.push(url);
  const { stdout } = await run(join(root, 'node_modules/.bin/autocannon'), args, {
    maxBuffer: 10 * 1024 * 1024,
  });
  const report = JSON.parse(stdout) as {
    requests: { average: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
    statusCodeStats?: Record<string, { count: number }>;
  };
  return {
    name,
    connections: options.connections,
    seconds: options.seconds,
    requestsPerSecond: Math.round(report.requests.average),
    p50Ms: report.latency.p50,
    p99Ms: report.latency.p99,
    non2xx: report.non2xx,
    errors: report.errors,
    statuses: Object.fromEntries(
      Object.entries(report.statusCodeStats ?? {}).map(([status, { count }]) => [status, count]),
    ),
  };
}

/**
 * Requests whose body changes every time (autocannon sends one fixed body; its id replacement breaks the
 * Content-Length): `connections` loops of fetch for `seconds`, each request made by `request(i)`.
 */
export async function loopLoad(
  name: string,
  options: { seconds: number; connections: number },
  request: (connection: number, i: number) => Promise<Response>,
): Promise<HttpLoad> {
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const until = Date.now() + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.connections }, async (_, connection) => {
      for (let i = 0; Date.now() < until; i++) {
        const started = performance.now();
        try {
          const response = await request(connection, i);
          await response.arrayBuffer();
          if (response.status >= 300) non2xx++;
          latencies.push(performance.now() - started);
        } catch {
          errors++;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
  return {
    name,
    connections: options.connections,
    seconds: options.seconds,
    requestsPerSecond: Math.round(latencies.length / options.seconds),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    non2xx,
    errors,
  };
}
