import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { Caller } from '#lib/accounts/api-keys.ts';
import { BadRequest, NotFound, ValidationFailed } from '#lib/errors.ts';
import type { Event, Internal, Result } from './context.ts';
import { callerOf, paramsOf } from './request.ts';

/**
 * The object a route's path names, found for the caller: undefined (or a NotFound thrown) when the caller's
 * account has no such object, another account's included.
 */
export type PathObjectFinder = (caller: Caller, params: Record<string, string>) => Promise<unknown>;

/**
 * The order of answers (decisions.md, "Errors"): the object the path names (404, also another account's) answers
 * before the body (400, 422). A handler checks its body before or after reading its object as suits it; when the
 * request is refused for its body, query or headers (400, 422), this looks the object up (one read, only then)
 * and answers 404 instead when there is none. A request that is otherwise right pays nothing.
 */
export function pathObjectFirst(
  find: PathObjectFinder,
): MiddlewareObj<Event, Result, Error, Context, Internal> {
  return {
    onError: async (request) => {
      const { error } = request;
      if (!(error instanceof BadRequest) && !(error instanceof ValidationFailed)) return;
      try {
        const found = await find(callerOf(request.event), paramsOf(request.event));
        if (found === undefined) request.error = new NotFound();
      } catch (failure) {
        // A NotFound thrown by the finder is the 404; a store failure is the answer too (the object could not be
        // told). Never thrown from here: an onError that throws leaves the request without an answer.
        request.error = failure as Error;
      }
    },
  };
}
