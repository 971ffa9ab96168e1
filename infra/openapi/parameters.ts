import { MAX_IF_MATCH_LENGTH } from '#lib/versioned-update.ts';
import type { MarkedKind } from './exception-kinds.ts';

/**
 * The request headers several operations share, as components.parameters of the OpenAPI document, each with
 * the exception marks of the Spectral lint it carries (./exception-kinds.ts).
 */
export interface SharedParameter {
  readonly parameter: Readonly<Record<string, unknown>>;
  readonly exceptions?: readonly MarkedKind[];
}

export const sharedParameters = {
  IdempotencyKey: {
    parameter: {
      name: 'Idempotency-Key',
      in: 'header',
      description:
        'Makes a retry safe: within 24 hours the same key and body get the first answer again, and ' +
        'never a second change. 1 to 255 printable ASCII characters (an RFC 8941 quoted string is ' +
        'taken without its quotes).',
      // lib/http/idempotency.ts's KEY_RULE, which refuses any other key with a 422.
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]{1,255}$' },
    },
  },
  IfMatch: {
    parameter: {
      name: 'If-Match',
      in: 'header',
      description:
        'The ETag of the version you read (or `*`, or a list of ETags): the update is refused (412) if ' +
        'the ticket moved on. Any other value matches no version. At most 1,024 characters (a longer one is ' +
        'a 422 on `if_match`).',
      // lib/versioned-update.ts's MAX_IF_MATCH_LENGTH.
      schema: { type: 'string', maxLength: MAX_IF_MATCH_LENGTH, pattern: '^(\\*|"\\d+"( *, *"\\d+")*)$' },
    },
  },
} as const satisfies Record<string, SharedParameter>;

/**
 * Where an operation's query parameter is declared: components.parameters, under `<operation>.<parameter>`;
 * the operation lists it by reference. So anything (the lint's exceptions first) can name it, where its
 * position in the operation's list would say nothing and move when a parameter is added or reordered.
 */
export const queryParameterKey = (operation: string, parameter: string) => `${operation}.${parameter}`;
