/**
 * One structured JSON line per request (and one per unexpected error). Never a key, a body or an e-mail
 * address: only ids, the route and figures. LOG_LEVEL=silent turns it off (tests, benchmarks).
 */
export interface RequestLog {
  route: string;
  method: string;
  status: number;
  durationMs: number;
  requestId: string;
  accountId?: string | undefined;
}

const silent = () => process.env.LOG_LEVEL === 'silent';

export function logRequest(entry: RequestLog): void {
  if (silent()) return;
  console.log(JSON.stringify({ level: entry.status >= 500 ? 'error' : 'info', msg: 'request', ...entry }));
}

export function logError(requestId: string, error: unknown): void {
  if (silent()) return;
  const err = error instanceof Error ? error : new Error(String(error));
  console.error(
    JSON.stringify({
      level: 'error',
      msg: 'unexpected error',
      requestId,
      error: err.name,
      detail: err.message,
      stack: err.stack,
    }),
  );
}
