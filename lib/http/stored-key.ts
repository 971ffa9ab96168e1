import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { requireLiveKey } from '#lib/accounts/key-management.ts';
import type { Scope } from '#lib/accounts/scopes.ts';
import type { Event, Internal, Result } from './context.ts';
import { callerOf } from './request.ts';

/** The key routes' scope: every route that needs it checks the calling key as stored. */
export const KEY_ROUTES_SCOPE: Scope = 'keys:manage';

/**
 * The key routes, all of them, check the calling key as stored (decisions.md, "API keys"): a key revoked,
 * rotated out or expired within the authorizer's cache time is still let through by the gateway, and must never
 * make, list, rotate or revoke keys. One read of its record, beside the rate count, before the body is read and
 * before an Idempotency-Key's kept answer: a revoked key gets a 401, never a replay.
 */
export function storedKey(): MiddlewareObj<Event, Result, Error, Context, Internal> {
  return {
    before: async (request) => {
      const caller = callerOf(request.event);
      await requireLiveKey(caller.accountId, caller.keyId);
    },
  };
}
