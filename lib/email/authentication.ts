import type { SESReceipt } from 'aws-lambda';

/**
 * A received mail's authentication (decisions.md, "The e-mail channel", "Authentication"): SPF, DKIM and DMARC
 * results, recorded on every received mail as `email.authentication`. Deployed they are SES's receipt verdicts;
 * locally the `Authentication-Results` header (RFC 8601) that a receiving edge relay adds under the service's own
 * authserv-id (`SMTP_AUTHSERV_ID`, default `deskpipe.local`), any other such header ignored: the header is text
 * the sender wrote unless the relay in front of us wrote it, so only ours is believed.
 */

/** RFC 8601's result keywords (section 2.7); anything else is not a result. */
const RESULTS = new Set(['pass', 'fail', 'softfail', 'neutral', 'none', 'temperror', 'permerror', 'policy']);

export interface MailAuthentication {
  spf: string;
  dkim: string;
  dmarc: string;
}

export const UNAUTHENTICATED: MailAuthentication = { spf: 'none', dkim: 'none', dmarc: 'none' };

/** The local server's trusted authserv-id (operations.md, "E-mail locally"). */
export const localAuthservId = () => process.env.SMTP_AUTHSERV_ID?.trim() || 'deskpipe.local';

/** Whether the mail authenticates for its From domain (DMARC pass: SPF or DKIM aligned with it). */
export const authenticatesFrom = (auth: MailAuthentication) => auth.dmarc === 'pass';

/** A header's text beyond this is not read (a relay's header is a few hundred characters). */
const MAX_HEADER = 4_096;

/**
 * The results of the first `Authentication-Results` header (in the order given: the top one, the last relay's)
 * whose authserv-id is `authservId` (case-insensitive; version 1 or none); every result `none` when there is
 * none. A DMARC result for another domain than `fromDomain` (its `header.from`) is not the mail's; of several
 * DKIM results (one per signature), a pass counts.
 */
export function authenticationResults(
  headers: readonly string[],
  authservId: string,
  fromDomain: string | undefined,
): MailAuthentication {
  for (const header of headers) {
    const parts = splitUnquoted(withoutComments(header.slice(0, MAX_HEADER)), ';');
    const head = parts[0]?.trim().split(/\s+/) ?? [];
    const [id, version, ...rest] = head;
    if (!id || rest.length > 0 || (version !== undefined && version !== '1')) continue;
    if (unquote(id).toLowerCase() !== authservId.toLowerCase()) continue;
    return resultsOf(parts.slice(1), fromDomain?.toLowerCase());
  }
  return { ...UNAUTHENTICATED };
}

const METHOD = /^\s*([a-z0-9_-]+)\s*(?:\/\s*\d+\s*)?=\s*([a-z0-9_-]+)(?:\s+(.*))?$/is;
const PROPERTY = /([a-z0-9_-]+)\s*\.\s*([a-z0-9_-]+)\s*=\s*("(?:[^"\\]|\\.)*"|\S+)/gi;

function resultsOf(resinfos: string[], fromDomain: string | undefined): MailAuthentication {
  const out = { ...UNAUTHENTICATED };
  const seen = new Set<string>();
  for (const resinfo of resinfos.slice(0, 50)) {
    const [, rawMethod, rawResult, props = ''] = METHOD.exec(resinfo) ?? [];
    const method = rawMethod?.toLowerCase();
    const result = rawResult?.toLowerCase();
    if (!result || !RESULTS.has(result) || (method !== 'spf' && method !== 'dkim' && method !== 'dmarc'))
      continue;
    if (method === 'dmarc' && fromDomain) {
      const headerFrom = [...props.matchAll(PROPERTY)].find(
        (p) => p[1]?.toLowerCase() === 'header' && p[2]?.toLowerCase() === 'from',
      )?.[3];
      if (headerFrom !== undefined && unquote(headerFrom).toLowerCase() !== fromDomain) continue;
    }
    // The first result of a method stands, but for DKIM any passing signature does.
    if (!seen.has(method) || (method === 'dkim' && result === 'pass')) out[method] = result;
    seen.add(method);
  }
  return out;
}

/** The text with its comments (RFC 5322 CFWS: nested, with quoted pairs) replaced by a space, quoted strings kept. */
function withoutComments(text: string): string {
  let out = '';
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\\' && (quoted || depth > 0)) {
      if (!depth) out += c + (text[i + 1] ?? '');
      i++;
    } else if (depth > 0) {
      if (c === '(') depth++;
      else if (c === ')') depth--;
      if (depth === 0) out += ' ';
    } else if (c === '"') {
      quoted = !quoted;
      out += c;
    } else if (c === '(' && !quoted) depth = 1;
    else out += c;
  }
  return out;
}

/** The text split at `separator` outside quoted strings. */
function splitUnquoted(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\\' && quoted) {
      current += c + (text[i + 1] ?? '');
      i++;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === separator && !quoted) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}

const unquote = (value: string) =>
  value.startsWith('"') && value.endsWith('"') && value.length >= 2
    ? value.slice(1, -1).replace(/\\(.)/g, '$1')
    : value;

/** SES's receipt verdicts as results: PASS pass, FAIL fail, PROCESSING_FAILED temperror, anything else none. */
export function sesAuthentication(receipt: Partial<SESReceipt> | undefined): MailAuthentication {
  const of = (verdict: { status?: string } | undefined) =>
    ({ PASS: 'pass', FAIL: 'fail', PROCESSING_FAILED: 'temperror' })[verdict?.status ?? ''] ?? 'none';
  return { spf: of(receipt?.spfVerdict), dkim: of(receipt?.dkimVerdict), dmarc: of(receipt?.dmarcVerdict) };
}
