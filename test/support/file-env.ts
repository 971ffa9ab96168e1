/**
 * Each test file starts from the environment its worker started with (the first setup file, before the store's).
 * In a tier whose files share one module graph in a worker (the api tier: vitest.config.ts, `isolate: false`),
 * a variable one file set (an upload folder, a vendor's URL, a secret) would otherwise still be set for the next.
 */
const worker = globalThis as { workerEnv?: Record<string, string | undefined> };
if (!worker.workerEnv) {
  worker.workerEnv = { ...process.env };
} else {
  const started = worker.workerEnv;
  for (const name of Object.keys(process.env)) if (!(name in started)) delete process.env[name];
  for (const [name, value] of Object.entries(started)) process.env[name] = value;
}
