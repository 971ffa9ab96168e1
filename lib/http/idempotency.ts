import { createHash, randomUUID } from 'node:crypto';
import {
  claimIdempotencyKey,
  IDEMPOTENCY_TTL_SECONDS,
  type IdempotencyClaim,
  type KeptAnswer,
  keepAnswer,
  type Receipt,
  releaseIdempotencyKey,
} from '#lib/data/idempotency.ts';
import { Conflict, ValidationFailed } from '#lib/errors.ts';
import { nowMicros } from '#lib/time.ts';
import { logError } from './log.ts';

/**
 * Idempotency-Key on writes (decisions.md, "Safe retries"). A request with a key first claims it (one
 * conditional Put, so a replay or a rejected duplicate never reaches the domain and takes no ticket number);
 * the domain writes its change and the kept answer in one transaction through the receipt; a failed request
 * releases the key. See docs/data-model.md, "Idempotency".
 */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_RULE = /^[\x20-\x7E]{1,255}$/;
const INVALID_KEY = 'The idempotency key must be 1 to 255 printable ASCII characters.';

/** The key as sent: an RFC 8941 quoted string loses its quotes (and escapes); anything else is taken as is. */
export function parseIdempotencyKey(values: string[]): string {
  if (values.length !== 1) throw ValidationFailed.field('idempotency_key', INVALID_KEY);
  let key = (values[0] ?? '').trim();
  const quoted = /^"((?:[^"\\]|\\["\\])*)"$/.exec(key);
  if (quoted) key = (quoted[1] ?? '').replace(/\\(["\\])/g, '$1');
  if (!KEY_RULE.test(key)) throw ValidationFailed.field('idempotency_key', INVALID_KEY);
  return key;
}

/** JSON with object keys sorted at every depth: two bodies equal as data have the same text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export interface IdempotentRequest {
  accountId: string;
  key: string;
  method: string;
  path: string;
  body: unknown;
}

/** A claimed key for the length of one request. */
export interface IdempotentCall {
  receipt<T>(answer: (result: T) => KeptAnswer): Receipt<T>;
  /** After success: keeps the answer unless a transaction already did. */
  succeeded(answer: KeptAnswer): Promise<void>;
  /** After failure: frees the key (the failure is not kept). Never throws. */
  failed(): Promise<void>;
}

export type IdempotencyStart = { replay: KeptAnswer } | { call: IdempotentCall };

/**
 * Claims the key, or says what to answer instead: the kept answer (same request), 422 (same key, other
 * request) or 409 (same key, still running).
 */
export async function startIdempotent(request: IdempotentRequest): Promise<IdempotencyStart> {
  const nowUs = nowMicros();
  const claim: IdempotencyClaim = {
    accountId: request.accountId,
    keyHash: sha256(request.key),
    fingerprint: sha256(canonicalJson([request.method.toUpperCase(), request.path, request.body ?? null])),
    token: randomUUID(),
    expiresAt: Math.floor(nowUs / 1_000_000) + IDEMPOTENCY_TTL_SECONDS,
  };
  let held: Awaited<ReturnType<typeof claimIdempotencyKey>>;
  try {
    held = await claimIdempotencyKey(claim, Math.floor(nowUs / 1000));
  } catch (error) {
    // The claim may have landed with its answer lost: free it, or the client's retry would wait out the lease.
    await release(claim);
    throw error;
  }
  if (held.outcome !== 'claimed') {
    if (held.fingerprint !== claim.fingerprint) {
      throw ValidationFailed.field(
        'idempotency_key',
        'The idempotency key was already used for a different request.',
      );
    }
    if (held.outcome === 'running') {
      throw new Conflict('A request with this idempotency key is still being processed.');
    }
    return { replay: held.answer };
  }

  let used = false;
  return {
    call: {
      receipt<T>(answer: (result: T) => KeptAnswer): Receipt<T> {
        return {
          claim,
          answer: (result: T) => {
            used = true;
            return answer(result);
          },
          get used() {
            return used;
          },
        };
      },
      succeeded: async (answer) => {
        if (!used) await keepAnswer(claim, answer);
      },
      failed: () => release(claim),
    },
  };
}

async function release(claim: IdempotencyClaim): Promise<void> {
  try {
    await releaseIdempotencyKey(claim);
  } catch (error) {
    // The store is failing: the claim's lease runs out by itself (IDEMPOTENCY_LEASE_MS).
    logError(error);
  }
}
