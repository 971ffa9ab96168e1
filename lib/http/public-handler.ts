import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { NotFound } from '#lib/errors.ts';
import { type Event, httpContext, type Internal, inRequestScope, type Result } from './context.ts';
import { baseUrlOf, paramsOf, requestIdOf, stagePathOf } from './request.ts';

/** What a public route is told of its request. */
export interface PublicRequest {
  params: Record<string, string>;
  /** Scheme, host and stage path, for absolute links. */
  baseUrl: string;
  /** The stage path ('' locally), for links within the API's own origin. */
  stagePath: string;
}

/** A public route's answer: any content type, as text. */
export interface PublicAnswer {
  statusCode: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

/**
 * The stack of the routes without a key (the contract and its page): the same request scope, id, logs, counts and
 * error answers as every route, and nothing of the store (no rate count, no idempotency), so these bundles
 * stay small and answer even when the store does not. A route that finds nothing returns undefined: 404.
 */
export function publicHandler(
  options: { route: { readonly name: string } },
  serve: (request: PublicRequest) => PublicAnswer | undefined | Promise<PublicAnswer | undefined>,
) {
  const stack = middy<Event, Result, Error, Context, Internal>({ timeoutEarlyInMillis: 0 })
    .use(httpContext(options))
    .handler(async (event) => {
      const answer = await serve({
        params: paramsOf(event),
        baseUrl: baseUrlOf(event),
        stagePath: stagePathOf(event),
      });
      if (!answer) throw new NotFound();
      return {
        statusCode: answer.statusCode,
        headers: {
          'Content-Type': answer.contentType,
          'X-Request-Id': requestIdOf(event),
          'X-Content-Type-Options': 'nosniff',
          ...answer.headers,
        },
        body: answer.body,
      };
    });
  return inRequestScope(options.route, stack);
}
