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

export class PayloadTooLarge extends AppError {
  readonly statusCode = 413;
}

export class UnsupportedMediaType extends AppError {
  readonly statusCode = 415;
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
