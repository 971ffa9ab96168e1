import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import type { Context } from 'aws-lambda';
import { type LogKeys, requestScope, runInRequestScope } from '#lib/request-scope.ts';

/**
 * The service's one logger (Powertools Logger): JSON lines with level, timestamp and service, plus the keys of
 * the invocation being served. Never a key, a body or an e-mail address: only ids, the route and figures.
 *
 * LOG_LEVEL: DEBUG, INFO (default), WARN, ERROR or SILENT, in any case; read once, when the module loads.
 * Tests and the bench run SILENT. Deployed, a Lambda application log level (advanced logging controls),
 * when set, wins over LOG_LEVEL: Powertools follows AWS_LAMBDA_LOG_LEVEL.
 */
export const SERVICE_NAME = 'deskpipe';

/** Powertools' logger, with its cold start readable: the invocation's keys are made here, not in the logger. */
class ServiceLogger extends Logger {
  /** True for the first invocation of an environment Lambda started on demand, then false (Powertools' rule). */
  takeColdStart(): boolean {
    return this.getColdStart();
  }
}

// Powertools takes the level in any case and checks it: an unknown value leaves the default, INFO.
const logger = new ServiceLogger({
  serviceName: SERVICE_NAME,
  logLevel: process.env.LOG_LEVEL as LogLevel | undefined,
});

export interface InvocationKeys {
  requestId: string;
  accountId?: string | undefined;
  route?: string | undefined;
}

/**
 * The keys on every line of an invocation: its ids and, with the Lambda context, the fields Powertools'
 * addContext would add (named as it names them: cold start, the Lambda request id…). They are kept in the
 * invocation's scope (lib/request-scope.ts) and put on each line, never in the logger, whose keys are the
 * process's: the local gateway serves overlapping requests in one process, and each line takes its own.
 */
export function invocationLogKeys(keys: InvocationKeys, context?: Context): LogKeys {
  const lambda = context && {
    cold_start: logger.takeColdStart(),
    function_arn: context.invokedFunctionArn,
    function_memory_size: context.memoryLimitInMB,
    function_name: context.functionName,
    function_request_id: context.awsRequestId,
  };
  return { ...lambda, ...keys };
}

/** Runs an invocation that is not an HTTP request (the authorizer, a background function) in a scope of its own. */
export function inInvocationScope<T>(
  keys: InvocationKeys,
  context: Context | undefined,
  work: () => Promise<T>,
): Promise<T> {
  return runInRequestScope({ log: invocationLogKeys(keys, context) }, work);
}

/** A line's fields: the current invocation's keys, then the line's own. */
const withKeys = (fields: object): Record<string, unknown> => ({ ...requestScope()?.log, ...fields });

export interface RequestSummary {
  method: string;
  status: number;
  durationMs: number;
}

/** The one line per request: info, or error for a 5xx. */
export function logRequest(summary: RequestSummary): void {
  if (summary.status >= 500) logger.error('request', withKeys(summary));
  else logger.info('request', withKeys(summary));
}

/**
 * An unexpected error: its name, message and stack, nothing else. Not Powertools' own error formatting, which
 * copies every enumerable property (an SDK error can hold the item a condition failed on, e-mail included).
 */
export function logError(error: unknown): void {
  const err = error instanceof Error ? error : new Error(String(error));
  logger.error(
    'unexpected error',
    withKeys({ error: { name: err.name, message: err.message, stack: err.stack } }),
  );
}

/** One line per background run (a stream batch fanned out, a run of the due runner): what it did, in figures. */
export function logWorkerRun(name: string, figures: Record<string, number>): void {
  logger.info(name, withKeys(figures));
}

/**
 * A background function's handler (as skuba's createBatchSQSHandler wraps its workers): the invocation runs in
 * its scope with its log keys, `run` does the work, and its figures are logged as the run's one line under `name`.
 */
export function workerHandler<E, R>(
  name: string,
  run: (event: E, context?: Context) => Promise<{ answer: R; figures: Record<string, number> }>,
): (event: E, context?: Context) => Promise<R> {
  return (event, context) =>
    inInvocationScope({ requestId: context?.awsRequestId ?? 'unknown' }, context, async () => {
      const { answer, figures } = await run(event, context);
      logWorkerRun(name, figures);
      return answer;
    });
}

export type AuthorizerDecision =
  | { decision: 'allow'; keyId: string; accountId: string }
  | { decision: 'deny' | 'unauthenticated'; keyPrefix: string | undefined };

/** The authorizer's answer, at debug level: the key's id or its shown prefix, never the key. */
export function logAuthorizerDecision(decision: AuthorizerDecision): void {
  logger.debug('authorizer decision', withKeys(decision));
}

/** One line per received mail (lib/email/receive/copy.ts): ids and the outcome only, never an address or a subject. */
export function logMail(name: string, fields: Record<string, string | number>): void {
  logger.info(name, withKeys(fields));
}
