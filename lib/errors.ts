/**
 * Errors that reach a client. Each carries its HTTP status and the body the client sees; anything that
 * is not an AppError is unexpected and becomes a generic 500 with no internals.
 * The domain throws these; it does not know how they are delivered.
 */
export type FieldErrors = Record<string, string[]>;

export abstract class AppError extends Error {
  abstract readonly statusCode: number;
  body(): Record<string, unknown> {
    return { message: this.message };
  }
  /** Headers the answer carries besides the usual ones (Retry-After, ...). */
  headers(): Record<string, string> {
    return {};
  }
}

export class BadRequest extends AppError {
  readonly statusCode = 400;
}

export class Unauthenticated extends AppError {
  readonly statusCode = 401;
  constructor() {
    super('Unauthenticated.');
  }
}

export class Forbidden extends AppError {
  readonly statusCode = 403;
}

export class NotFound extends AppError {
  readonly statusCode = 404;
  constructor() {
    super('Not found.');
  }
}

/** The same Idempotency-Key is being served by another request right now. */
export class Conflict extends AppError {
  readonly statusCode = 409;
  override headers() {
    return { 'Retry-After': '1' };
  }
}

/** The object's state refuses the request (a 409 with what to do; no retry advice: it will not succeed as it is). */
export class Refused extends AppError {
  readonly statusCode = 409;
}

/** If-Match named another version than the resource's: nothing changed. */
export class PreconditionFailed extends AppError {
  readonly statusCode = 412;
  constructor(message = 'The ticket has changed since you read it (If-Match does not match its ETag).') {
    super(message);
  }
}

export class PayloadTooLarge extends AppError {
  readonly statusCode = 413;
}

export class UnsupportedMediaType extends AppError {
  readonly statusCode = 415;
}

/**
 * Over the account's rate limit this minute (decisions.md, "Rate limits"): the request changed nothing. It
 * carries the window's headers (lib/http/rate-limit.ts writes them) and when to come back.
 */
export class TooManyRequests extends AppError {
  readonly statusCode = 429;
  constructor(
    readonly retryAfterSeconds: number,
    private readonly windowHeaders: Record<string, string>,
  ) {
    super('Too Many Attempts.');
  }
  override headers() {
    return { ...this.windowHeaders, 'Retry-After': String(this.retryAfterSeconds) };
  }
}

/**
 * The store is unreachable, too slow or throttling: the request may be retried (with its Idempotency-Key, a
 * retry of a write that did land answers as the first one did).
 */
export class ServiceUnavailable extends AppError {
  readonly statusCode = 503;
  constructor(
    readonly retryAfterSeconds = 1,
    options?: ErrorOptions,
  ) {
    super('Service temporarily unavailable.', options);
  }
  override headers() {
    return { 'Retry-After': String(this.retryAfterSeconds) };
  }
}

/** Laravel's validation error: `message` is the first error, then "(and N more errors)". */
export class ValidationFailed extends AppError {
  readonly statusCode = 422;
  constructor(readonly errors: FieldErrors) {
    super(summarize(errors));
  }
  override body(): Record<string, unknown> {
    return { message: this.message, errors: this.errors };
  }
  static field(field: string, message: string): ValidationFailed {
    return new ValidationFailed({ [field]: [message] });
  }
}

function summarize(errors: FieldErrors): string {
  const all = Object.values(errors).flat();
  const first = all[0] ?? 'The given data was invalid.';
  const more = all.length - 1;
  if (more <= 0) return first;
  return `${first} (and ${more} more error${more === 1 ? '' : 's'})`;
}
