import { createHash, randomUUID } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import {
  type CommitAttachment,
  claimIdempotencyKey,
  completionAttachment,
  IDEMPOTENCY_TTL_SECONDS,
  type IdempotencyClaim,
  type KeptAnswer,
  keepAnswer,
  releaseIdempotencyKey,
} from '#lib/data/requests/idempotency.ts';
import { Conflict, ValidationFailed } from '#lib/errors.ts';
import { keyedHash } from '#lib/keyed-hash.ts';
import { logError } from '#lib/log.ts';
import { nowMicros } from '#lib/time.ts';
import { type Event, type Internal, REPLAYED_HEADER, type Result } from './context.ts';
import { callerOf, type HttpResult, headerValues, queryOf } from './request.ts';
import { jsonTextResponse } from './response.ts';

/**
 * Idempotency-Key on writes (decisions.md, "Safe retries"). A request with a key first claims it (one
 * conditional Put, so a replay or a rejected duplicate never reaches the domain and takes no ticket number);
 * the domain writes its change and the kept answer in one transaction (commitHook); a failed request releases
 * the key. See docs/data-model.md, "Idempotency".
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

/**
 * JSON with object keys sorted at every depth: two bodies equal as data have the same text. Iterative (a stack of
 * what is left to write), so that no body, however deep, can overflow the call stack.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const todo: ({ text: string } | { value: unknown })[] = [{ value }];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    if ('text' in next) {
      out.push(next.text);
      continue;
    }
    const item = next.value;
    if (item === null || typeof item !== 'object') {
      out.push(JSON.stringify(item) ?? 'null');
      continue;
    }
    const parts: typeof todo = [];
    if (Array.isArray(item)) {
      for (const [i, element] of item.entries()) parts.push({ text: i === 0 ? '' : ',' }, { value: element });
    } else {
      const record = item as Record<string, unknown>;
      for (const [i, k] of Object.keys(record).sort().entries()) {
        parts.push({ text: `${i === 0 ? '' : ','}${JSON.stringify(k)}:` }, { value: record[k] });
      }
    }
    const [open, close] = Array.isArray(item) ? ['[', ']'] : ['{', '}'];
    // Last in, first out: pushed in reverse, so the parts come out in order (one at a time: a spread of a
    // long array would pass the engine's limit on arguments).
    todo.push({ text: close });
    for (let i = parts.length - 1; i >= 0; i--) todo.push(parts[i] as (typeof parts)[number]);
    todo.push({ text: open });
  }
  return out.join('');
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * What tells a retry from another request under the same key: a keyed hash (HMAC under the key-hash secret,
 * lib/keyed-hash.ts) of the method, path, body and query (when it has one). Keyed, because it outlives any erasure
 * for 24 hours and a body can be little more than a person's address (`POST /api/erasures {"email"}`): an unkeyed
 * hash of it could be guessed back by hashing candidates (decisions.md, "Erasing a person").
 */
export const requestFingerprint = (
  request: Pick<IdempotentRequest, 'accountId' | 'method' | 'path' | 'body' | 'query'>,
) => {
  const parts: unknown[] = [request.method.toUpperCase(), request.path, request.body ?? null];
  // The query only when there is one (a macro's `?dry_run=true` is another request than its real application),
  // so a request without one keeps the fingerprint it always had.
  if (request.query && Object.keys(request.query).length > 0) parts.push(request.query);
  return keyedHash(`idempotency:${request.accountId}:${canonicalJson(parts)}`);
};

export interface IdempotentRequest {
  accountId: string;
  key: string;
  method: string;
  path: string;
  body: unknown;
  /** The query parameters, each as the list of its values. */
  query?: Record<string, string[]> | undefined;
}

/** A claimed key for the length of one request. */
export interface IdempotentCall {
  claim: IdempotencyClaim;
  /** Set once the route attached the answer to its commit: the answer is kept with the change, or not at all. */
  attached: boolean;
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
    fingerprint: requestFingerprint(request),
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
  return { call: { claim, attached: false } };
}

/** The answer as an Idempotency-Key keeps it: status, the exact body text, and the route's own headers. */
export const keptAnswerOf = (result: HttpResult): KeptAnswer => ({
  statusCode: result.statusCode,
  body: JSON.stringify(result.body),
  ...(result.headers ? { headers: result.headers } : {}),
});

/**
 * The commit hook a route's domain gets for a claimed key: for the result it is about to write, the answer
 * rendered as the route renders it, as plain data its transaction writes with the change.
 */
export function commitHook<T>(
  call: IdempotentCall,
  present: (result: T) => HttpResult,
): (result: T) => CommitAttachment {
  return (result) => {
    call.attached = true;
    return completionAttachment(call.claim, keptAnswerOf(present(result)));
  };
}

/** Methods that change something: the ones an Idempotency-Key applies to. */
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The Idempotency-Key of a write, as a middleware (shaped like Powertools' makeHandlerIdempotent):
 * - before: claims the key. A replay answers the kept answer instead of the route (set in request.internal,
 *   which the stack's handler answers: a middy early return would also skip the `after` of the outer
 *   middlewares, and a replay is logged, counted and carries its rate headers like any answer); the same key
 *   still running (409) or used for another request (422) throws, and its error answer goes out like any other.
 * - after: keeps the answer, unless the route's commit already kept it (commitHook).
 * - onError: releases the claim, so that the client may retry with the same key (the failure is not kept).
 */
export function idempotency(): MiddlewareObj<Event, Result, Error, Context, Internal> {
  return {
    before: async (request) => {
      const { event, internal } = request;
      if (!WRITE_METHODS.has(event.httpMethod)) return;
      const values = headerValues(event, IDEMPOTENCY_HEADER);
      if (values.length === 0) return;
      const start = await startIdempotent({
        accountId: callerOf(event).accountId,
        key: parseIdempotencyKey(values),
        method: event.httpMethod,
        path: event.path,
        body: internal.body,
        query: queryOf(event),
      });
      if ('replay' in start) {
        const { statusCode, body, headers } = start.replay;
        internal.replay = jsonTextResponse(statusCode, body, internal.requestId, {
          ...headers,
          [REPLAYED_HEADER]: 'true',
        });
        return;
      }
      internal.idempotency = start.call;
    },
    after: async (request) => {
      const { idempotency: call, answer } = request.internal;
      if (call && !call.attached && answer) await keepAnswer(call.claim, keptAnswerOf(answer));
    },
    onError: async (request) => {
      const call = request.internal.idempotency;
      if (call) await release(call.claim);
    },
  };
}

/** Frees a claim; never throws. */
async function release(claim: IdempotencyClaim): Promise<void> {
  try {
    await releaseIdempotencyKey(claim);
  } catch (error) {
    // The store is failing, or the request's deadline passed: the claim's lease runs out by itself
    // (IDEMPOTENCY_LEASE_MS).
    logError(error);
  }
}
