/**
 * Why a rule of Spectral's OWASP ruleset does not fit part of the OpenAPI document: each kind turns its rules
 * off there and says why. `npm run openapi` writes them into .spectral.yaml (./spectral-ruleset.ts). The first
 * three are derived from the declarations; the others are marks, put beside the field they describe
 * (`exceptions` of an operation in ./operations.ts, of a shared parameter in ./parameters.ts).
 */
export interface ExceptionKind {
  readonly rules: readonly string[];
  readonly reason: string;
}

export const derivedKinds = {
  answers: {
    rules: [
      'owasp:api4:2023-string-limit',
      'owasp:api4:2023-string-restricted',
      'owasp:api4:2023-integer-limit',
      'owasp:api4:2023-array-limit',
    ],
    reason:
      'Answers: the API4 limits (string and integer limits, array sizes, string formats) guard what a client ' +
      'sends. On the answers they would add limits the service does not promise; instead every answer of the ' +
      "HTTP tests is checked against this document (test/support/contract.ts). Every operation's responses, " +
      'the answer schemas (infra/openapi/schemas.ts) and the shared answers.',
  },
  public: {
    rules: ['owasp:api2:2023-read-restricted', 'owasp:api8:2023-define-error-responses-401'],
    reason:
      'Public on purpose (decisions.md, "Contract"): a route the route table declares without auth takes no ' +
      'key, so it has no security scheme and no 401.',
  },
  noInput: {
    rules: ['owasp:api8:2023-define-error-validation'],
    reason:
      'No input to validate, so no 400 or 422: a route without a body, a query or an Idempotency-Key takes ' +
      'nothing but its path, and a path that names nothing is a 404, as an unknown one is.',
  },
} as const satisfies Record<string, ExceptionKind>;

export const markedKinds = {
  freeText: {
    rules: ['owasp:api4:2023-string-restricted'],
    reason:
      'Free text: the service limits its length (stated as maxLength) and no character set, so a pattern or ' +
      'format here would be one the service does not enforce.',
  },
  accountScopedId: {
    rules: ['owasp:api1:2023-no-numeric-ids'],
    reason:
      "The small integer id of an agent, a team, a pipeline or a stage of the caller's own account (as the " +
      "Laravel API it replaces does), or of one of its organizations: every lookup is scoped to the key's " +
      "account, so another account's ids name nothing. Tickets and deals themselves are addressed by uuid or " +
      'reference.',
  },
} as const satisfies Record<string, ExceptionKind>;

export type MarkedKind = keyof typeof markedKinds;

/** An operation's marks: per kind, the body fields or query parameters it covers, by name. */
export type OperationExceptions = Readonly<Partial<Record<MarkedKind, readonly string[]>>>;
