import { Presets, SingleBar } from 'cli-progress';
import type { PresentedImport } from '#lib/imports/present.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * How `admin import` shows a job going (operations.md, "Imports"): on a terminal a progress bar (cli-progress:
 * docs/packages.md), tickets done of the source's total (a count while the total is not known); otherwise a line at
 * most every 5 s of the clock, and at every change of status or phase, so a log of a long import stays short.
 */
export interface ImportProgress {
  show(job: PresentedImport): void;
  stop(): void;
}

export const PROGRESS_LINE_MS = 5_000;

interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
}

const describe = (job: PresentedImport) =>
  `${job.status}, ${job.phase}: ${job.progress.done}${job.progress.total === null ? '' : `/${job.progress.total}`} tickets`;

export function importProgress(output: Output): ImportProgress {
  return output.isTTY ? barProgress(output) : lineProgress(output);
}

function lineProgress(output: Output): ImportProgress {
  let lastAt = Number.NEGATIVE_INFINITY;
  let last = '';
  return {
    show(job) {
      const stage = `${job.status} ${job.phase}`;
      if (stage === last && nowMillis() - lastAt < PROGRESS_LINE_MS) return;
      last = stage;
      lastAt = nowMillis();
      output.write(`import ${job.id}: ${describe(job)}\n`);
    },
    stop() {},
  };
}

function barProgress(output: Output): ImportProgress {
  const bar = new SingleBar(
    {
      stream: output as NodeJS.WritableStream,
      format: 'import {id} [{bar}] {value}/{shownTotal} tickets | {status}, {phase}',
      hideCursor: true,
      clearOnComplete: false,
    },
    Presets.shades_classic,
  );
  let started = false;
  return {
    show(job) {
      const total = job.progress.total ?? Math.max(job.progress.done, 1);
      const payload = {
        id: job.id,
        status: job.status,
        phase: job.phase,
        shownTotal: job.progress.total ?? '?',
      };
      if (!started) {
        bar.start(total, job.progress.done, payload);
        started = true;
        return;
      }
      bar.setTotal(total);
      bar.update(job.progress.done, payload);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
