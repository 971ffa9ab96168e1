import type { Gateway } from './http.ts';

type Answer = Awaited<ReturnType<Gateway['call']>>;

/**
 * A write sent as the contract's client sends it (docs/decisions.md, "Failures and retries"), for the system tier's
 * races: with an Idempotency-Key (the caller's), a 503 is sent again with the key (the store was too busy for the
 * request's deadline: nothing was written, or all of it, and the key keeps it from landing twice) and a 409 (the
 * key's first request still holds it) waited out, in real time between tries (so not in the api tier, which keeps
 * no real timers). `firstStatuses`, if given, collects the status of each write's first answer.
 */
export async function withRetries(send: () => Promise<Answer>, firstStatuses?: number[]): Promise<Answer> {
  let answer = await send();
  firstStatuses?.push(answer.status);
  for (let i = 0; (answer.status === 503 || answer.status === 409) && i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100 + 100 * i));
    answer = await send();
  }
  return answer;
}
