import { createServer } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Service, shutdownOf } from '#infra/local/services.ts';

/**
 * npm start's shutdown (infra/local/services.ts): its parts stop in order and the store last; a part that never
 * stops does not keep the store running (a CI run once found DynamoDB Local alive after the service was told to
 * stop: the test helper had given up on a slow shutdown and killed only its wrapper).
 */
function serviceWith(dispatcherStop: () => Promise<void>, order: string[]): Service {
  return {
    baseUrl: 'http://127.0.0.1:0',
    server: createServer(),
    dispatcher: { stop: dispatcherStop },
    mail: {
      port: 0,
      stop: async () => {
        order.push('mail');
      },
    },
    mailDir: '/nonexistent',
    relay: undefined,
    sentDir: '/nonexistent',
    sender: { close: () => order.push('sender') },
    runners: [],
    stopRunners: () => order.push('runners'),
  };
}

describe('npm start stopping', () => {
  afterEach(() => vi.restoreAllMocks());

  it('stops its parts in order, the store last, then exits with the code', async () => {
    const order: string[] = [];
    const exited = new Promise<number>((resolve) => {
      vi.spyOn(process, 'exit').mockImplementation(((code: number) => resolve(code)) as never);
    });
    vi.spyOn(console, 'log').mockImplementation(() => {});
    const service = serviceWith(async () => {
      order.push('dispatcher');
    }, order);
    const shutdown = shutdownOf(service, false, async () => {
      order.push('store');
    });
    void shutdown.run(3);
    expect(await exited).toBe(3);
    expect(order).toEqual(['mail', 'dispatcher', 'runners', 'sender', 'store']);
    expect(shutdown.stopping()).toBe(true);
  });

  it('stops the store after its grace when a part never stops, and says which part', async () => {
    const order: string[] = [];
    const exited = new Promise<number>((resolve) => {
      vi.spyOn(process, 'exit').mockImplementation(((code: number) => resolve(code)) as never);
    });
    const said = vi.spyOn(console, 'log').mockImplementation(() => {});
    const service = serviceWith(() => new Promise<void>(() => {}), order);
    const shutdown = shutdownOf(
      service,
      false,
      async () => {
        order.push('store');
      },
      50,
    );
    void shutdown.run(0);
    expect(await exited).toBe(0);
    expect(order).toEqual(['mail', 'store']);
    expect(said.mock.calls.flat().join('\n')).toContain(
      'Stopping the webhook dispatcher took over 50 ms: stopping the store anyway.',
    );
  });

  it('stops the store when a part fails to stop', async () => {
    const order: string[] = [];
    const exited = new Promise<number>((resolve) => {
      vi.spyOn(process, 'exit').mockImplementation(((code: number) => resolve(code)) as never);
    });
    vi.spyOn(console, 'log').mockImplementation(() => {});
    const failed = vi.spyOn(console, 'error').mockImplementation(() => {});
    const service = serviceWith(() => Promise.reject(new Error('socket closed')), order);
    void shutdownOf(service, false, async () => {
      order.push('store');
    }).run(1);
    expect(await exited).toBe(1);
    expect(order).toEqual(['mail', 'store']);
    expect(String(failed.mock.calls[0]?.[0])).toBe('Stopping the webhook dispatcher failed:');
  });
});
