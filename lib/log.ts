import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import type { Context } from 'aws-lambda';

/**
 * The service's one logger (Powertools Logger): JSON lines with level, timestamp and service, plus the keys of
 * the invocation being served. Never a key, a body or an e-mail address: only ids, the route and figures.
 *
 * LOG_LEVEL: DEBUG, INFO (default), WARN, ERROR or SILENT, in any case; read once, when the module loads.
 * Tests and the bench run SILENT. Deployed, a Lambda application log level (advanced logging controls),
 * when set, wins over LOG_LEVEL: Powertools follows AWS_LAMBDA_LOG_LEVEL.
 */
export const SERVICE_NAME = 'deskpipe';

// Powertools takes the level in any case and checks it: an unknown value leaves the default, INFO.
const logger = new Logger({
  serviceName: SERVICE_NAME,
  logLevel: process.env.LOG_LEVEL as LogLevel | undefined,
});

export interface InvocationKeys {
  requestId: string;
  accountId?: string | undefined;
  route?: string | undefined;
}

/**
 * Starts an invocation's log context: the previous invocation's keys go, these are on every line until the
 * next invocation starts. With the Lambda context, lines also carry Powertools' function fields (cold start,
 * the Lambda request id).
 *
 * In Lambda an environment serves one invocation at a time (with several at once, Powertools keeps keys per
 * invocation). The local gateway serves overlapping requests in one process, where they share these keys.
 */
export function startInvocationLog(keys: InvocationKeys, context?: Context): void {
  logger.resetKeys();
  if (context) logger.addContext(context);
  logger.appendKeys({ ...keys });
}

export interface RequestSummary {
  method: string;
  status: number;
  durationMs: number;
}

/** The one line per request: info, or error for a 5xx. */
export function logRequest(summary: RequestSummary): void {
  if (summary.status >= 500) logger.error('request', { ...summary });
  else logger.info('request', { ...summary });
}

/**
 * An unexpected error: its name, message and stack, nothing else. Not Powertools' own error formatting, which
 * copies every enumerable property (an SDK error can hold the item a condition failed on, e-mail included).
 */
export function logError(error: unknown): void {
  const err = error instanceof Error ? error : new Error(String(error));
  logger.error('unexpected error', { error: { name: err.name, message: err.message, stack: err.stack } });
}

/** One line per background run (a stream batch fanned out, a run of the due runner): what it did, in figures. */
export function logWorkerRun(name: string, figures: Record<string, number>): void {
  logger.info(name, { ...figures });
}

/**
 * A background function's handler (as skuba's createBatchSQSHandler wraps its workers): the invocation's log
 * keys are started, `run` does the work, and its figures are logged as the run's one line under `name`.
 */
export function workerHandler<E, R>(
  name: string,
  run: (event: E, context?: Context) => Promise<{ answer: R; figures: Record<string, number> }>,
): (event: E, context?: Context) => Promise<R> {
  return async (event, context) => {
    startInvocationLog({ requestId: context?.awsRequestId ?? 'unknown' }, context);
    const { answer, figures } = await run(event, context);
    logWorkerRun(name, figures);
    return answer;
  };
}

export type AuthorizerDecision =
  | { decision: 'allow'; keyId: string; accountId: string }
  | { decision: 'deny' | 'unauthenticated'; keyPrefix: string | undefined };

/** The authorizer's answer, at debug level: the key's id or its shown prefix, never the key. */
export function logAuthorizerDecision(decision: AuthorizerDecision): void {
  logger.debug('authorizer decision', { ...decision });
}

/** One line per received mail (lib/email/receive.ts): ids and the outcome only, never an address or a subject. */
export function logMail(name: string, fields: Record<string, string | number>): void {
  logger.info(name, { ...fields });
}
