import * as v from 'valibot';
import { param } from '#lib/list-params.ts';
import { formatTimestamp, ISO_TIME_WITH_OFFSET, parseInstant, type Timestamp } from '#lib/time.ts';
import { MAX_TIME_LENGTH } from '#lib/validation/time-fields.ts';
import {
  oneOf,
  optionalField,
  parseInput,
  requiredEmail,
  requiredField,
  requiredText,
  stringRules,
} from '#lib/validation.ts';
import { IMPORT_SOURCES, type ImportSource } from './records.ts';

/** The import routes' bodies and queries (decisions.md, "Imports: moving a helpdesk in"), with Laravel's messages. */

const MAX_SECRET_LENGTH = 512;
const MAX_NAME_LENGTH = 63;

const sinceRules = v.pipe(
  v.string('The since field must be a string.'),
  v.maxLength(MAX_TIME_LENGTH, `The since field must not be greater than ${MAX_TIME_LENGTH} characters.`),
  v.check(
    (s) => parseInstant(s) !== undefined,
    'The since field must be an ISO 8601 time with an offset, such as 2027-01-31T00:00:00.000000Z.',
  ),
  v.transform((s) => formatTimestamp(parseInstant(s) as number)),
);
const sinceWire = v.pipe(v.string(), v.maxLength(MAX_TIME_LENGTH), v.regex(ISO_TIME_WITH_OFFSET));

const rateShareRules = v.pipe(
  v.number('The rate share field must be a number.'),
  v.check((n: number) => n >= 0.1 && n <= 1, 'The rate share field must be between 0.1 and 1.'),
);

/** A vendor's account name (`acme` of acme.zendesk.com): its shape checked by sourceBaseUrl, with its own 422. */
const vendorName = (field: string) =>
  requiredField(
    field,
    stringRules(field, MAX_NAME_LENGTH),
    v.pipe(v.string(), v.maxLength(MAX_NAME_LENGTH), v.regex(/^[a-z0-9][a-z0-9-]{0,62}$/)),
  );

/** What every source's body has. */
const common = {
  source: v.picklist(IMPORT_SOURCES),
  mode: oneOf('mode', ['validate', 'run'] as const),
  since: optionalField(sinceRules, sinceWire),
  rate_share: optionalField(rateShareRules, v.pipe(v.number(), v.minValue(0.1), v.maxValue(1))),
};

export const ZendeskImportSchema = v.object({
  ...common,
  source: v.literal('zendesk'),
  subdomain: vendorName('subdomain'),
  email: requiredEmail('email'),
  api_token: requiredText('api_token', MAX_SECRET_LENGTH),
});
export const FreshdeskImportSchema = v.object({
  ...common,
  source: v.literal('freshdesk'),
  domain: vendorName('domain'),
  api_key: requiredText('api_key', MAX_SECRET_LENGTH),
});
export const NdjsonImportSchema = v.object({ ...common, source: v.literal('ndjson') });

/** The `createImport` route's body, for the contract: one of the three sources' bodies. */
export const CreateImportSchema = v.variant('source', [
  ZendeskImportSchema,
  FreshdeskImportSchema,
  NdjsonImportSchema,
]);

const SourceOnly = v.object({
  source: v.pipe(
    v.unknown(),
    v.check((s) => s !== undefined && s !== null && s !== '', 'The source field is required.'),
    v.picklist(IMPORT_SOURCES, 'The selected source is invalid.'),
  ),
});

export interface ImportRequest {
  source: ImportSource;
  mode: 'validate' | 'run';
  since: Timestamp | null;
  rateShare: number | null;
  /** What the source reads with (sealed on the job, never shown). */
  credentials: Record<string, string>;
}

/** The body read: the source first (a 422 on `source`), then that source's fields (a 422 on each). */
export function parseImportRequest(body: unknown): ImportRequest {
  const { source } = parseInput(SourceOnly, body);
  const shared = (input: Omit<v.InferOutput<typeof NdjsonImportSchema>, 'source'>) => ({
    source,
    mode: input.mode ?? 'run',
    since: input.since ?? null,
    rateShare: input.rate_share ?? null,
  });
  if (source === 'zendesk') {
    const input = parseInput(ZendeskImportSchema, body);
    const credentials = { subdomain: input.subdomain, email: input.email, api_token: input.api_token };
    return { ...shared(input), credentials };
  }
  if (source === 'freshdesk') {
    const input = parseInput(FreshdeskImportSchema, body);
    return { ...shared(input), credentials: { domain: input.domain, api_key: input.api_key } };
  }
  return { ...shared(parseInput(NdjsonImportSchema, body)), credentials: {} };
}

export const IMPORT_ID_PATTERN = /^imp_\d{13}[0-9a-f]{10}$/;
const MAX_ERROR_LIMIT = 100;
const MAX_CURSOR_LENGTH = 40;

/** The `listImportErrors` route's query: `after` (a row's cursor), `limit` (1..100, default 50). */
export const ImportErrorsQueryParams = v.object({
  after: param(
    'after',
    v.pipe(v.string(), v.regex(/^\d{10}#\d{4}$/, 'The after field must be a cursor this list gave.')),
    v.pipe(v.string(), v.maxLength(MAX_CURSOR_LENGTH), v.regex(/^\d{10}#\d{4}$/)),
  ),
  limit: param(
    'limit',
    v.pipe(
      v.string(),
      v.regex(/^\d+$/, 'The limit field must be an integer.'),
      v.transform(Number),
      v.check(
        (n: number) => n >= 1 && n <= MAX_ERROR_LIMIT,
        `The limit field must be between 1 and ${MAX_ERROR_LIMIT}.`,
      ),
    ),
    v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_ERROR_LIMIT)),
  ),
});

export function parseImportErrorsQuery(query: Record<string, string[]>): {
  after: string | null;
  limit: number;
} {
  const q = parseInput(ImportErrorsQueryParams, query);
  return { after: q.after ?? null, limit: q.limit ?? 50 };
}

/** The `listImports` route's query: `after` (an import's id: older ones), `limit` (1..100, default 20). */
export const ImportListQueryParams = v.object({
  after: param(
    'after',
    v.pipe(v.string(), v.regex(IMPORT_ID_PATTERN, 'The after field must be an import id.')),
    v.pipe(v.string(), v.maxLength(27), v.regex(IMPORT_ID_PATTERN)),
  ),
  limit: ImportErrorsQueryParams.entries.limit,
});

export function parseImportListQuery(query: Record<string, string[]>): {
  after: string | null;
  limit: number;
} {
  const q = parseInput(ImportListQueryParams, query);
  return { after: q.after ?? null, limit: q.limit ?? 20 };
}
