import { afterEach, describe, expect, it, vi } from 'vitest';
import { conflictBackoffMs, MAX_CONFLICT_ATTEMPTS } from '#lib/data/store/errors.ts';

/**
 * The pause after a conflict (lib/data/store/errors.ts, retryOnConflict): full jitter over a window that doubles
 * from 8 ms to 256 ms. The bounds here are the windows' (Math.random at its extremes), not a timing.
 */
afterEach(() => {
  vi.restoreAllMocks();
});

const windows = (attempts: number, narrowing = false) => {
  vi.spyOn(Math, 'random').mockReturnValue(1);
  return Array.from({ length: attempts }, (_, i) => conflictBackoffMs(i + 1, narrowing));
};

describe('conflictBackoffMs', () => {
  it('waits anywhere in a window that doubles from 8 ms and stops growing at 256 ms', () => {
    expect(windows(8)).toEqual([8, 16, 32, 64, 128, 256, 256, 256]);
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(conflictBackoffMs(3)).toBe(0);
  });

  it('within a request, narrows again past the widest window: a change that keeps losing comes back most often', () => {
    expect(windows(11, true)).toEqual([8, 16, 32, 64, 128, 256, 128, 64, 32, 32, 32]);
    // A runner's tries keep the widest window (they are bounded by their number, not a deadline).
    expect(windows(11)).toEqual([8, 16, 32, 64, 128, 256, 256, 256, 256, 256, 256]);
    // In the 8.5 s of a request, a change cancelled at once every time still tries ~500 times (on average ~16 ms
    // apart once narrowed): what ends its tries is its deadline (retryOnConflict), never their number.
    expect(windows(30, true).reduce((sum, ms) => sum + ms, 0)).toBe(1_400);
  });

  it("spends a runner's tries over its widest windows: 30 conflicts in a row wait at most ~6.6 s, on average half", () => {
    const longest = windows(30).reduce((sum, ms) => sum + ms, 0);
    expect(longest).toBe(6_648);
    // Without a deadline (a runner), the tries stop at MAX_CONFLICT_ATTEMPTS: at most ~16 s of pauses.
    expect(windows(MAX_CONFLICT_ATTEMPTS).reduce((sum, ms) => sum + ms, 0)).toBeLessThan(17_000);
  });
});
