import { BadRequest, UnsupportedMediaType } from '#lib/errors.ts';

/**
 * What a JSON body may be beyond its size (decisions.md, "Limits on input"): UTF-8, and nested at most
 * MAX_JSON_DEPTH levels. Both are checked before the body is parsed, so a hostile body costs one pass over its
 * text and nothing else.
 */

/**
 * The deepest body a route takes is 2 levels (custom_fields, events); 32 leaves room for growth and stays far
 * below what any walk over the value could take (a recursive one ran out of stack near 2,950 levels).
 */
export const MAX_JSON_DEPTH = 32;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether JSON text nests objects and arrays deeper than `max` (brackets inside strings do not count). */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** 400 for a body nested deeper than MAX_JSON_DEPTH. */
export function checkJsonDepth(text: string): void {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new BadRequest(`The request body must not nest deeper than ${MAX_JSON_DEPTH} levels.`);
  }
}

const JSON_MEDIA_TYPE = /^application\/([\w.+-]+\+)?json$/i;
/** RFC 8259 §8.1: JSON between systems is UTF-8; `utf8` is a common spelling of it. */
const UTF8 = new Set(['utf-8', 'utf8']);

/**
 * 415 unless the Content-Type is JSON (application/json or a +json type) and says no charset or UTF-8. A
 * charset that is not UTF-8 is refused by name rather than decoded: API Gateway hands the function the body as
 * UTF-8 text, so the bytes a Latin-1 or UTF-16 body was sent as are gone before the function could decode them.
 */
export function checkJsonContentType(header: string): void {
  const [type = '', ...parameters] = header.split(';');
  if (!JSON_MEDIA_TYPE.test(type.trim())) {
    throw new UnsupportedMediaType('The request body must be sent with Content-Type: application/json.');
  }
  for (const parameter of parameters) {
    const at = parameter.indexOf('=');
    if (at < 0 || parameter.slice(0, at).trim().toLowerCase() !== 'charset') continue;
    const charset = parameter
      .slice(at + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (!UTF8.has(charset.toLowerCase())) {
      throw new UnsupportedMediaType(
        `The request body must be UTF-8: charset ${JSON.stringify(charset.slice(0, 40))} is not supported.`,
      );
    }
  }
}
