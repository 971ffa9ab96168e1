import { describe, expect, it } from 'vitest';
import { sampledTerm, sampleRefusal, TERM_SAMPLE_RATE } from '#lib/data/index/term-sample.ts';

/**
 * The terms' sample (lib/data/index/term-sample.ts): one term item in 64, chosen by a hash of the entity's number
 * and the term; a word refused from it only when a word of fewer keys than its read's limit gives that many
 * sampled keys with a chance below 1e-16, computed here exactly from the binomial tail.
 */

/** log P(X ≥ k) for X ~ Binomial(n, p), summed in log space from k (the terms fall fast past the mean). */
function logTail(n: number, p: number, k: number): number {
  if (k > n) return Number.NEGATIVE_INFINITY;
  // log C(n, k) + k log p + (n - k) log(1 - p), by lgamma's sum of logs (n ≤ 200,000: a loop is exact enough).
  let logC = 0;
  for (let i = 0; i < k; i++) logC += Math.log(n - i) - Math.log(i + 1);
  let term = logC + k * Math.log(p) + (n - k) * Math.log(1 - p);
  let sum = term;
  for (let j = k; j < n; j++) {
    term += Math.log(n - j) - Math.log(j + 1) + Math.log(p) - Math.log(1 - p);
    const next = Math.max(sum, term) + Math.log1p(Math.exp(-Math.abs(sum - term)));
    if (next - sum < 1e-18) break;
    sum = next;
  }
  return sum;
}

describe('the terms sample', () => {
  it('samples about one term in 64, the same every time for an entity and a term', () => {
    let sampled = 0;
    const words = ['invoice', 'printer', 'refund', 'login', 'kiwi'];
    for (let number = 1; number <= 20_000; number++) {
      for (const word of words) if (sampledTerm(number, word)) sampled++;
    }
    const rate = sampled / (20_000 * words.length);
    expect(rate).toBeGreaterThan(1 / TERM_SAMPLE_RATE - 0.002);
    expect(rate).toBeLessThan(1 / TERM_SAMPLE_RATE + 0.002);
    for (let number = 1; number <= 200; number++) {
      expect(sampledTerm(number, 'invoice')).toBe(sampledTerm(number, 'invoice'));
    }
  });

  it.each([1_600, 10_000, 48_975, 100_000])(
    'a word of fewer keys than a limit of %i reaches the refusal with a chance below 1e-16',
    (limit) => {
      const refusal = sampleRefusal(limit);
      // The worst case: a word of limit - 1 keys (fewer keys give a smaller tail).
      expect(logTail(limit - 1, 1 / TERM_SAMPLE_RATE, refusal)).toBeLessThan(Math.log(1e-16));
    },
  );

  it.each([
    [48_975, 2],
    [100_000, 1.5],
    [10_000, 4],
  ])(
    'a word of %i keys by %f is refused from the sample all but always (the probe does its work)',
    (limit, by) => {
      // 48,975: the share of each of two words in the default budget, less the probe's own. Near the margin's
      // 12 standard deviations, a smaller limit needs a word further past it.
      expect(logTail(Math.round(by * limit), 1 / TERM_SAMPLE_RATE, sampleRefusal(limit))).toBeGreaterThan(
        Math.log(0.999),
      );
    },
  );

  it('reads at most a sixteenth of the default budget to refuse a word', () => {
    expect(sampleRefusal(100_000)).toBeLessThanOrEqual(100_000 / 16);
    expect(sampleRefusal(100_000)).toBe(2_049);
  });
});
