import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { clock, nowMillis, setClock, sleep, systemClock } from '#lib/time.ts';
import { atTime, ManualClock, parkOnClock } from '#test/support/clock.ts';

/**
 * The tests' manual clock (test/support/clock.ts) behind the service's one clock (lib/time.ts): it stands still
 * until advanced, wakes each waiter at its own time in order, and waits for what a waiter started (its HTTP
 * requests) before moving on.
 */
afterEach(() => setClock());

describe('the manual clock', () => {
  it('stands still, and wakes each waiter at its time, in order, reading that time', async () => {
    const manual = new ManualClock(1_000_000);
    setClock(manual);
    const woken: string[] = [];
    const wait = (name: string, ms: number) => sleep(ms).then(() => woken.push(`${name}@${nowMillis()}`));
    void wait('b', 250);
    void wait('a', 100);
    void wait('c', 250);
    void wait('late', 1_000);
    expect(manual.waiting).toBe(4);
    await manual.advance(99);
    expect(woken).toEqual([]);
    await manual.advance(200);
    expect(woken).toEqual(['a@1000100', 'b@1000250', 'c@1000250']);
    expect(nowMillis()).toBe(1_000_299);
    expect(manual.nowUs()).toBe(1_000_299_000);
    await manual.advanceTo(1_001_000);
    expect(woken.at(-1)).toBe('late@1001000');
  });

  it('runs what a waiter starts at its time: a loop that sleeps again is woken again within the same advance', async () => {
    const manual = new ManualClock(0);
    setClock(manual);
    const looks: number[] = [];
    void (async () => {
      for (let i = 0; i < 5; i++) {
        looks.push(nowMillis());
        await sleep(250);
      }
    })();
    await manual.advance(1_000);
    expect(looks).toEqual([0, 250, 500, 750, 1_000]);
  });

  it('ends a wait at once when its signal aborts, and release wakes every waiter without moving the clock', async () => {
    const manual = new ManualClock(0);
    const stop = new AbortController();
    let aborted = false;
    let released = false;
    void manual.sleep(60_000, stop.signal).then(() => {
      aborted = true;
    });
    void manual.sleep(60_000).then(() => {
      released = true;
    });
    stop.abort();
    await Promise.resolve();
    expect(aborted).toBe(true);
    expect(manual.waiting).toBe(1);
    manual.release();
    await Promise.resolve();
    expect(released).toBe(true);
    expect(manual.nowMs()).toBe(0);
  });

  it('settles what a waiter started before the next: its HTTP request answered, but not one parked on the clock', async () => {
    const manual = new ManualClock(0);
    setClock(manual);
    const server = createServer(async (req, res) => {
      if (req.url === '/parked') {
        // Answered only after 500 ms of the clock.
        parkOnClock(res);
        void sleep(500).then(() => res.end('late'));
        return;
      }
      // Answered twenty turns of the event loop later: more than the clock's idle turns.
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const get = (path: string) =>
      new Promise<string>((resolve, reject) => {
        request(`http://127.0.0.1:${port}${path}`, (res) => {
          let body = '';
          res.on('data', (chunk) => {
            body += chunk;
          });
          res.on('end', () => resolve(`${body}@${nowMillis()}`));
        })
          .on('error', reject)
          .end();
      });
    try {
      const answers: string[] = [];
      // At 100: a request answered some real time later, then a wait of 100 of the clock: its answer comes at 100.
      void sleep(100).then(async () => {
        answers.push(await get('/now'));
        await sleep(100);
        answers.push(`after@${nowMillis()}`);
      });
      const parked = get('/parked');
      await manual.advance(300);
      expect(answers).toEqual(['ok@100', 'after@200']);
      await manual.advance(200);
      expect(await parked).toBe('late@500');
    } finally {
      server.close();
    }
  });

  it('advances until a condition holds, failing past its bound', async () => {
    const manual = new ManualClock(0);
    setClock(manual);
    let ready = false;
    void sleep(1_500).then(() => {
      ready = true;
    });
    expect(await manual.advanceUntil(() => ready, { within: 2_000 })).toBe(true);
    expect(manual.nowMs()).toBe(1_500);
    await expect(manual.advanceUntil(() => false, { within: 1_000, label: 'never' })).rejects.toThrow(
      'not within 1000 ms of the clock: never',
    );
    expect(manual.nowMs()).toBe(2_500);
  });

  it('atTime stands the clock at an instant for a piece of work, then puts back the clock it found', async () => {
    expect(clock()).toBe(systemClock);
    const at = Date.parse('2030-01-01T00:00:00Z');
    expect(await atTime(at, async () => nowMillis())).toBe(at);
    expect(clock()).toBe(systemClock);
  });
});
