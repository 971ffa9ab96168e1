/**
 * How long one function may run: the CDK construct sets it as every function's timeout
 * (infra/constructs/deskpipe-function.ts), and the local gateway gives its handlers the same time.
 */
export const FUNCTION_TIMEOUT_MS = 10_000;

/**
 * What a request leaves unused of its function's time: its deadline is the time remaining less this, so that a
 * request whose store stalls answers 503 (and logs it) rather than being cut off by the timeout
 * (docs/decisions.md, "Failures and retries").
 */
export const DEADLINE_MARGIN_MS = 1_500;
