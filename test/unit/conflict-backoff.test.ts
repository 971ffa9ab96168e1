import { afterEach, describe, expect, it, vi } from 'vitest';
import { conflictBackoffMs, MAX_CONFLICT_ATTEMPTS } from '#lib/data/store/errors.ts';

/**
 * The pause after a conflict (lib/data/store/errors.ts, retryOnConflict): full jitter over a window that doubles
 * from 8 ms to 256 ms. The bounds here are the windows' (Math.random at its extremes), not a timing.
 */
afterEach(() => {
  vi.restoreAllMocks();
});

const windows = (attempts: number) => {
  vi.spyOn(Math, 'random').mockReturnValue(1);
  return Array.from({ length: attempts }, (_, i) => conflictBackoffMs(i + 1));
};

describe('conflictBackoffMs', () => {
  it('waits anywhere in a window that doubles from 8 ms and stops growing at 256 ms', () => {
    expect(windows(8)).toEqual([8, 16, 32, 64, 128, 256, 256, 256]);
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(conflictBackoffMs(3)).toBe(0);
  });

  it("spends a request's tries within its 8.5 s deadline: 30 conflicts in a row wait at most ~6.6 s, on average half", () => {
    const longest = windows(30).reduce((sum, ms) => sum + ms, 0);
    expect(longest).toBe(6_648);
    // Without a deadline (a runner), the tries stop at MAX_CONFLICT_ATTEMPTS: at most ~16 s of pauses.
    expect(windows(MAX_CONFLICT_ATTEMPTS).reduce((sum, ms) => sum + ms, 0)).toBeLessThan(17_000);
  });
});
