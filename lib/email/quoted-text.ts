import { mayMatch, QUOTE_HEADERS, type QuotePattern, SIGNATURES } from './quote-patterns.ts';

/**
 * Quoted history and signature in a reply's text (docs/email.md, "The body"): email-reply-parser 2.3.7's
 * algorithm (src/parser/emailparser.ts, the port of GitHub's EmailReplyParser; MIT, its notice in
 * ./quote-patterns.ts) and its patterns, with its cost bounded whatever the text. The library ran its quote-header
 * patterns over the whole text, where `\s*` and `[\s\S]+` span any number of lines: quadratic in a run of blank
 * or whitespace-only lines (30,000 of them: 30 s of synchronous CPU, the whole service frozen), in repeated `Op …`
 * or `On …` lines, and polynomial in one long line (` on at` repeated: 0.5 s in 4 KB). Here:
 *
 * - a pattern runs only on one line, or a window of up to MAX_JOINED_LINES lines, of at most MAX_HEADER_LENGTH
 *   characters, and only when the text meets the pattern's linear necessary conditions (its needle, its head or
 *   tail): a longer line is never a quote header or a signature (real ones are well under 200 characters), and a
 *   broken header is joined across at most 3 lines (the library joined up to the last line ending in `:` of the
 *   whole text, the reply's own text below the quote included);
 * - the rest is linear: the walk over the lines (each line's tests run once), the fragments, the trailing tildes
 *   (the library's `/~*$/` is quadratic in a run of tildes).
 *
 * test/unit/quoted-text.test.ts holds what the library took out of real mail, and the worst texts found.
 */

/** The longest line (or joined header) taken for a quote header or a signature. */
export const MAX_HEADER_LENGTH = 200;
/** The most lines a quote header broken by a mail client is joined from (`On …` / `<address> wrote:`). */
const MAX_JOINED_LINES = 3;

export interface Fragment {
  content: string;
  hidden: boolean;
  quoted: boolean;
  signature: boolean;
}

interface Building {
  /** Bottom-up, as walked. */
  lines: string[];
  quoted: boolean;
  signature: boolean;
}

/** The fragments of a reply's text, top-down: its own text, quoted history, signature (each hidden or not). */
export function fragmentsOf(text: string): Fragment[] {
  const lines = joinBrokenHeaders(text.replace(/\r\n/g, '\n').split('\n'));
  const header = lineTest(isQuoteHeader);
  const fragments: Fragment[] = [];
  let fragment: Building | undefined;
  // The line pushed last (the one below this one) and whether it is a signature's first line.
  let last = { line: '', signature: false };
  for (let at = lines.length - 1; at >= 0; at--) {
    const whole = lines[at] as string;
    // The library trims a line's end, unless it is a signature's first line (`-- `).
    const wholeSignature = isSignature(whole);
    const line = wholeSignature ? whole : whole.trimEnd();
    if (fragment) {
      if (last.signature) {
        fragments.push(done({ ...fragment, signature: true }));
        fragment = undefined;
      } else if (line === '' && header(at + 1, last.line)) {
        fragments.push(done({ ...fragment, quoted: true }));
        fragment = undefined;
      }
    }
    const quoted = line.startsWith('>');
    const continues =
      fragment && (fragment.quoted === quoted || (fragment.quoted && (line === '' || header(at, line))));
    if (!fragment || !continues) {
      if (fragment) fragments.push(done(fragment));
      fragment = { lines: [], quoted, signature: false };
    }
    fragment.lines.push(line);
    last = { line, signature: wholeSignature || (line !== whole && isSignature(line)) };
  }
  if (fragment) fragments.push(done(fragment));
  return fragments.reverse();
}

/** The visible text of the fragments: the hidden ones out, trailing tildes cut (as the library's Email does). */
export function visibleText(fragments: Fragment[]): string {
  const text = fragments
    .filter((f) => !f.hidden)
    .map((f) => f.content)
    .join('\n');
  let end = text.length;
  while (end > 0 && text[end - 1] === '~') end--;
  return text.slice(0, end);
}

/** A test of a line, run at most once a line (the walk asks of a line both as itself and as the one below). */
function lineTest(test: (line: string) => boolean): (at: number, line: string) => boolean {
  const known = new Map<number, boolean>();
  return (at, line) => {
    const answer = known.get(at) ?? test(line);
    known.set(at, answer);
    return answer;
  };
}

function done(fragment: Building): Fragment {
  // Top-down, its first line dropped when empty (the library's `/^\n/`).
  const content = fragment.lines.reverse().join('\n').replace(/^\n/, '');
  const empty = !content.includes('\n') ? content === '' : content.replaceAll('\n', '') === '';
  return {
    content,
    hidden: fragment.quoted || fragment.signature || empty,
    quoted: fragment.quoted,
    signature: fragment.signature,
  };
}

function isQuoteHeader(line: string): boolean {
  return (
    line !== '' &&
    line.length <= MAX_HEADER_LENGTH &&
    QUOTE_HEADERS.some((pattern) => mayMatch(pattern, line) && pattern.regex.test(line))
  );
}

function isSignature(line: string): boolean {
  return line !== '' && line.length <= MAX_HEADER_LENGTH && SIGNATURES.some((regex) => regex.test(line));
}

/**
 * A quote header a mail client broke across lines, joined into one (the library's fixBrokenSignatures): for each
 * pattern in turn, its first match, where it spans lines, has its line breaks made spaces. Only windows of up to
 * MAX_JOINED_LINES lines and MAX_HEADER_LENGTH characters around the pattern's needle are tried.
 */
function joinBrokenHeaders(lines: string[]): string[] {
  let text = new Text(lines);
  for (const pattern of QUOTE_HEADERS) {
    if (!pattern.regex.multiline) continue; // its `^` is the text's start: one line, nothing to join
    const match = firstMatch(pattern, text);
    if (!match || match.lines < 2) continue;
    const { start, lines: count } = match;
    const joined = text.lines;
    text = new Text([
      ...joined.slice(0, start),
      joined.slice(start, start + count).join(' '),
      ...joined.slice(start + count),
    ]);
  }
  return text.lines;
}

/** The lines, and the text they make with where each starts in it (built once, not once a pattern). */
class Text {
  readonly whole: string;
  readonly starts: number[] = [];
  constructor(readonly lines: string[]) {
    this.whole = lines.join('\n');
    let offset = 0;
    for (const line of lines) {
      this.starts.push(offset);
      offset += line.length + 1;
    }
  }
}

/** The first window (top-down) a pattern matches in: where its match starts, how many lines it spans. */
function firstMatch(pattern: QuotePattern, text: Text): { start: number; lines: number } | undefined {
  const { lines } = text;
  for (const line of candidateLines(pattern, text)) {
    let window = '';
    for (let count = 1; count <= MAX_JOINED_LINES && line + count <= lines.length; count++) {
      window = count === 1 ? (lines[line] as string) : `${window}\n${lines[line + count - 1]}`;
      if (window.length > MAX_HEADER_LENGTH) break;
      if (!mayMatch(pattern, window)) continue;
      const found = pattern.regex.exec(window);
      // A match that starts on a later line is that line's (a window of its own finds it).
      if (!found || found.index > (lines[line] as string).length) continue;
      // The lines its group (what the library joins) spans.
      const group = found[1] ?? found[0];
      const from = found.index + found[0].indexOf(group);
      return {
        start: line + countBreaks(window, 0, from),
        lines: countBreaks(window, from, from + group.length) + 1,
      };
    }
  }
  return undefined;
}

/**
 * The lines a window holding the pattern's needle can start at, in order: the line of each needle found in the
 * text, and the MAX_JOINED_LINES - 1 lines before it (one indexOf pass over the text a needle).
 */
function candidateLines(pattern: QuotePattern, text: Text): number[] {
  const { whole, starts: lineStarts } = text;
  const starts = new Set<number>();
  for (const needle of pattern.needles) {
    let line = 0;
    for (let at = whole.indexOf(needle); at !== -1; at = whole.indexOf(needle, at + needle.length)) {
      while (line + 1 < lineStarts.length && (lineStarts[line + 1] as number) <= at) line++;
      for (let back = MAX_JOINED_LINES - 1; back >= 0; back--) if (line - back >= 0) starts.add(line - back);
    }
  }
  return [...starts].sort((a, b) => a - b);
}

function countBreaks(text: string, from: number, to: number): number {
  let breaks = 0;
  for (let at = text.indexOf('\n', from); at !== -1 && at < to; at = text.indexOf('\n', at + 1)) breaks++;
  return breaks;
}
