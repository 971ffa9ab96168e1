import { cpus, loadavg, totalmem } from 'node:os';
/** Percentiles and a simple sequential timing loop. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

export function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export interface Timing {
  p50: number;
  p99: number;
  samples: number;
}

/** Runs `fn` `warmup` times unmeasured, then `iterations` times, one after another; latencies in ms. */
export async function time(
  fn: (i: number) => Promise<unknown>,
  iterations: number,
  warmup = 10,
): Promise<Timing> {
  for (let i = 0; i < warmup; i++) await fn(-1 - i);
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await fn(i);
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { p50: round(percentile(samples, 50)), p99: round(percentile(samples, 99)), samples: iterations };
}

export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The machine a run measured on, and its load average at the start and the end (the figures' context). */
export function machineUnderLoad(loadBefore: number) {
  return {
    cpus: cpus().length,
    memoryGb: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    load: [round(loadBefore, 1), round(loadavg()[0] ?? 0, 1)],
  };
}
