import { type SourceHttp, SourceUnavailable } from '#lib/imports/http.ts';
import { nowMillis, parseInstant, type Timestamp } from '#lib/time.ts';
import { asObject, asObjects } from './zendesk-map.ts';

/**
 * Zendesk's two kinds of paging (docs/imports.md, "Zendesk"): lists with cursor pagination (`meta.has_more`,
 * `links.next`) and the incremental cursor exports (`after_cursor`, `end_of_stream`). Each answers a page's items
 * and where the next page is (null at the end); a page without what the API documents is never taken for the end.
 */

type Json = Record<string, unknown>;

/** One page of a list: its items, and the URL of the next page (`links.next`, null when `meta.has_more` is not). */
export async function listPage(http: SourceHttp, url: string, key: string) {
  const body = asObject((await http.getJson(url)).body);
  if (!Array.isArray(body?.[key])) throw unreadable(url, key);
  if (asObject(body?.meta)?.has_more !== true) return { items: asObjects(body[key]), next: null, body };
  const next = asObject(body?.links)?.next;
  if (typeof next !== 'string' || next === '') throw unreadable(url, 'links.next');
  return { items: asObjects(body[key]), next, body };
}

/** Every page of a list (a few: group memberships, ticket fields, a ticket's comments), and its sideloaded users. */
export async function listAll(http: SourceHttp, first: string, key: string) {
  const items: Json[] = [];
  const users: Json[] = [];
  for (let url: string | null = first; url !== null; ) {
    const page = await listPage(http, url, key);
    items.push(...page.items);
    users.push(...asObjects(page.body?.users));
    url = page.next;
  }
  return { items, users };
}

/**
 * Seconds since the epoch of `since` (the exports' start_time); 0: everything. Zendesk refuses a start_time within
 * the last minute (what changed in it is not exported yet): a later `since` starts two minutes back instead (what
 * is read twice is keyed, and left unchanged).
 */
export function startTime(since: Timestamp | undefined): number {
  const us = since === undefined ? undefined : parseInstant(since);
  if (us === undefined) return 0;
  return Math.max(0, Math.min(Math.floor(us / 1_000_000), Math.floor(nowMillis() / 1000) - 120));
}

/** A page of an incremental cursor export, and the path of the next (null at `end_of_stream`). */
export async function exportPage(http: SourceHttp, url: string, key: string, path: string, params: string) {
  const body = asObject((await http.getJson(url)).body);
  const cursor = body?.after_cursor;
  if (!Array.isArray(body?.[key]) || typeof body?.end_of_stream !== 'boolean') throw unreadable(url, key);
  if (body.end_of_stream) return { items: asObjects(body[key]), next: null, body };
  if (typeof cursor !== 'string' || cursor === '') throw unreadable(url, 'after_cursor');
  return { items: asObjects(body[key]), next: `${path}?cursor=${encodeURIComponent(cursor)}${params}`, body };
}

/**
 * A page that does not hold what the API documents: the job pauses on it (and reads it again when it resumes)
 * rather than taking it for the end of the stream, so an import never stops short silently.
 */
function unreadable(url: string, missing: string): SourceUnavailable {
  return new SourceUnavailable(`the source answered a page without ${missing} for ${url.split('?')[0]}`);
}
