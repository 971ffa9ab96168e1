import type { Gateway } from './http.ts';

type Answer = Awaited<ReturnType<Gateway['call']>>;

/** What a retried send answers: its status and headers (a 429's Retry-After). */
interface Answered {
  status: number;
  headers: Headers;
}

/** The statuses a client of the contract sends a write again after, with its Idempotency-Key. */
export const WRITE_AGAIN = [503, 409, 429] as const;
/** The statuses a client asks a read again after. */
export const READ_AGAIN = [503, 429] as const;

/**
 * Sends until the answer is none of `again` (at most `tries` sends), waiting between tries as the contract's client
 * does (docs/decisions.md, "Failures and retries"): a 429's Retry-After (at most 10 s), otherwise 100 ms more each
 * try up to `longestWaitMs` (1 s; the stall and death tests' clients keep trying every 100 ms, to see the store
 * back at once). Real time between tries: the system tier's, never the api tier's (which keeps no real timers).
 */
export async function retrying<A extends Answered>(
  send: () => Promise<A>,
  again: readonly number[],
  tries = 30,
  longestWaitMs = 1000,
): Promise<A> {
  let answer = await send();
  for (let i = 1; again.includes(answer.status) && i < tries; i++) {
    const wait =
      answer.status === 429
        ? Math.min(Number(answer.headers.get('retry-after') ?? 1), 10) * 1000
        : Math.min(100 * i, longestWaitMs);
    await new Promise((resolve) => setTimeout(resolve, wait));
    answer = await send();
  }
  return answer;
}

/** A GET with the key, its body read as text, asked again after a 503 or 429 (`retrying`). */
export function retryingRead(url: string, key: string, tries = 30) {
  const send = async () => {
    const response = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  return retrying(send, READ_AGAIN, tries);
}

/**
 * A write sent as the contract's client sends it, for the system tier's races: with an Idempotency-Key (the
 * caller's), a 503 is sent again with the key (the store was too busy for the request's deadline: nothing was
 * written, or all of it, and the key keeps it from landing twice), a 409 (the key's first request still holds it)
 * and a 429 waited out. `firstStatuses`, if given, collects the status of each write's first answer.
 */
export function withRetries(send: () => Promise<Answer>, firstStatuses?: number[]): Promise<Answer> {
  let first = true;
  const sendNoting = async () => {
    const answer = await send();
    if (first) firstStatuses?.push(answer.status);
    first = false;
    return answer;
  };
  return retrying(sendNoting, WRITE_AGAIN);
}
