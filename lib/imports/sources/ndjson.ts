import type { ByteSource } from '../byte-source.ts';
import type { ImportPhase, ImportSourceReader, PageOptions, SourcePage } from '../records.ts';
import { INLINE_FILES } from './ndjson-attachments.ts';
import { mapLine, type RawLine } from './ndjson-map.ts';

/**
 * The reader of deskpipe's own import format (docs/import-format.md): a file of JSON lines, read by byte range.
 *
 * Each phase reads the file from its start, and keeps only its own type's lines: five passes, the first four
 * parsing every line but mapping only the few people lines. Why that is fine: reads are ranged, so a page costs a
 * few reads whatever the file's size, and nothing has to be held or written between passes; JSON.parse runs at
 * hundreds of MB/s, so a pass over a 1 GB file costs seconds of CPU and four S3 GETs a page, against the engine's
 * writes of every ticket and message. And it buys what a single pass could not: the file's lines may come in any
 * order, yet every person is written before any ticket names them, and a page is still bounded work.
 *
 * A page is up to `pageLines` lines or `pageBytes` bytes of the file, whichever comes first, counting every line
 * read (not only the phase's: a phase with no line still moves on in bounded steps). `next` is
 * `<byte offset>:<line number>` of the first line not read: a reader made again from nothing but it reads on, as
 * after a crash, and its error rows keep the file's line numbers.
 */

export interface NdjsonLimits {
  /** Lines a page reads at most. */
  pageLines: number;
  /** Bytes a page reads at most (it ends after the line that reaches it). */
  pageBytes: number;
  /** Bytes asked of the source in one read. */
  readBytes: number;
  /** A line's largest size in bytes, without its newline; a longer one is an error row, never held whole. */
  maxLineBytes: number;
}

export const NDJSON_LIMITS: NdjsonLimits = {
  pageLines: 500,
  pageBytes: 4 * 1024 * 1024,
  readBytes: 1024 * 1024,
  // A line is a ticket with its whole conversation: 1 MiB would refuse a ticket past ~15 bodies of the API's
  // largest (65,536 characters), 16 MiB holds hundreds; one line is the most a page holds beyond its 4 MiB.
  maxLineBytes: 16 * 1024 * 1024,
};

export function ndjsonSource(bytes: ByteSource, limits: NdjsonLimits = NDJSON_LIMITS): ImportSourceReader {
  return {
    source: 'ndjson',
    // Its attachments' bytes are in the file (ndjson-attachments.ts): copied, never fetched.
    files: INLINE_FILES,
    page: (phase, from, options) => readPage(bytes, limits, phase, from, options),
  };
}

async function readPage(
  bytes: ByteSource,
  limits: NdjsonLimits,
  phase: ImportPhase,
  from: string | null,
  { since, onTicket }: PageOptions,
): Promise<SourcePage> {
  const size = await bytes.size();
  let { offset, line } = from === null ? { offset: 0, line: 1 } : cursorOf(from);
  const page: SourcePage = { records: [], errors: [], next: null };
  let lines = 0;
  let read = 0;
  for await (const found of linesFrom(bytes, limits, offset, line, size)) {
    const outcome = mapLine(phase, found.line, since);
    if (outcome && 'record' in outcome) page.records.push(outcome.record);
    if (outcome && 'error' in outcome) page.errors.push(outcome.error);
    if (outcome) onTicket?.();
    read += found.end - offset;
    offset = found.end;
    line = found.line.number + 1;
    lines += 1;
    if (lines >= limits.pageLines || read >= limits.pageBytes) break;
  }
  page.next = offset < size ? `${offset}:${line}` : null;
  return page;
}

/** A checkpoint's `<offset>:<line>`; anything else is not this reader's and is refused. */
function cursorOf(from: string): { offset: number; line: number } {
  const match = /^(\d{1,15}):(\d{1,15})$/.exec(from);
  if (!match) throw new Error(`not an ndjson checkpoint: ${from}`);
  return { offset: Number(match[1]), line: Number(match[2]) };
}

/**
 * The lines from `offset` (the start of a line) to the file's end, each with the offset just past its newline. A
 * line split across two reads is joined; a line past `maxLineBytes` keeps only its first bytes and is skipped to its
 * newline, so memory stays bounded by one read and one line. A CR before the newline is dropped (CRLF files).
 */
async function* linesFrom(
  bytes: ByteSource,
  limits: NdjsonLimits,
  offset: number,
  firstLine: number,
  size: number,
): AsyncGenerator<{ line: RawLine; end: number }> {
  let number = firstLine;
  // The line being read: its bytes while within the limit, else only its first bytes (`head`); its length.
  let parts: Uint8Array[] = [];
  let head: Uint8Array | null = null;
  let length = 0;
  let endsInCr = false;
  const finish = (end: number) => {
    let whole = Buffer.concat(parts);
    if (whole.at(-1) === 0x0d) whole = whole.subarray(0, -1);
    if (head === null && whole.length > limits.maxLineBytes) head = whole.subarray(0, 512);
    const line: RawLine =
      head === null
        ? { number, bytes: whole }
        : { number, head, length: length - (endsInCr ? 1 : 0), limit: limits.maxLineBytes };
    number += 1;
    parts = [];
    head = null;
    length = 0;
    return { line, end };
  };
  const take = (segment: Uint8Array) => {
    length += segment.length;
    if (segment.length > 0) endsInCr = segment.at(-1) === 0x0d;
    if (head !== null) return;
    parts.push(segment);
    // Past the limit (and the one byte a CRLF's CR may add): only the first bytes are kept, to name the line.
    if (length > limits.maxLineBytes + 1) {
      head = Buffer.concat(parts).subarray(0, 512);
      parts = [];
    }
  };
  let position = offset;
  while (position < size) {
    const chunk = await bytes.read(position, Math.min(limits.readBytes, size - position));
    if (chunk.length === 0) throw new Error(`the file ended at ${position} of ${size} bytes`);
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
      take(chunk.subarray(start, newline));
      start = newline + 1;
      yield finish(position + start);
    }
    take(chunk.subarray(start));
    position += chunk.length;
  }
  if (length > 0) yield finish(size);
}
