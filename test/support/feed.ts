/** Reading the events feed over HTTP as an integrator does: follow `next_cursor` until it is null. */

export interface FeedEvent {
  id: string;
  type: string;
  created_at: string;
  data: { object: Record<string, unknown>; previous?: Record<string, unknown>; version: number };
}

type Call = (
  method: string,
  path: string,
  options: { key?: string },
) => Promise<{ status: number; body: unknown; text: string }>;

export interface FeedPosition {
  /** Every event read, in feed order. */
  events: FeedEvent[];
  /** Where the next read starts (the last cursor given, or the one started from). */
  after: string | undefined;
}

/** Reads from `after` to the current end of the feed, `limit` at a time; `types` as `type` parameters. */
export async function readFeedToEnd(
  call: Call,
  key: string,
  options: { after?: string | undefined; limit?: number; types?: string[] } = {},
): Promise<FeedPosition> {
  const events: FeedEvent[] = [];
  let after = options.after;
  for (let page = 0; page < 10_000; page++) {
    const params = new URLSearchParams();
    if (after) params.set('after', after);
    if (options.limit) params.set('limit', String(options.limit));
    for (const t of options.types ?? []) params.append('type', t);
    const r = await call('GET', `/api/events?${params}`, { key });
    if (r.status !== 200) throw new Error(`GET /api/events answered ${r.status}: ${r.text}`);
    const body = r.body as { data: FeedEvent[]; next_cursor: string | null };
    events.push(...body.data);
    if (body.next_cursor === null) return { events, after };
    after = body.next_cursor;
  }
  throw new Error('the feed did not end');
}
