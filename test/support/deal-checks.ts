import { addDecimal, percentOf } from '#lib/decimal.ts';
import type { Gateway } from './http.ts';

/**
 * Recounts for the deal list and the pipeline board (decisions.md, "Deals that move"): the deals as GET of each
 * one shows them, every list filter's total recounted from them, every board cell summed from them with exact
 * decimals. Each check answers its mismatches (empty when the service agrees), so a test reports them all.
 */

/** A deal as GET /api/deals/{deal} shows it (the fields the recounts need). */
export interface DealShown {
  uuid: string;
  name: string;
  amount: number;
  currency: string;
  status: 'open' | 'won' | 'lost';
  probability: number;
  pipeline: { id: number; name: string };
  stage: { id: number; name: string };
  contact: { uuid: string; full_name: string; email: string };
  lost_reason: string | null;
  won_at: string | null;
  lost_at: string | null;
  /** The ETag's version number. */
  version: number;
}

/** A pipeline as an account's state shows it. */
export interface PipelineShape {
  id: number;
  name: string;
  stages: { id: number; probability: number; position: number }[];
}

/** Runs `tasks` with at most `limit` in flight (a 2-core machine copes), answers in order. */
export async function inPool<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await (tasks[i] as () => Promise<T>)();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return out;
}

/** Every deal by GET, with its ETag's version. */
export async function readDeals(gateway: Gateway, key: string, uuids: string[]): Promise<DealShown[]> {
  return inPool(
    8,
    uuids.map((uuid) => async () => {
      const r = await gateway.call('GET', `/api/deals/${uuid}`, { key });
      if (r.status !== 200) throw new Error(`GET /api/deals/${uuid}: ${r.status} ${r.text}`);
      const version = Number(/^"(\d+)"$/.exec(r.headers.get('etag') ?? '')?.[1]);
      return { ...(r.body.data as Omit<DealShown, 'version'>), version };
    }),
  );
}

/** The board the spec asks for, from the deals (exact decimals, shown as the wire's numbers). */
export function expectedBoard(deals: DealShown[], pipeline: PipelineShape) {
  const sum = (chosen: DealShown[]) => {
    const byCurrency = new Map<string, string>();
    for (const d of chosen)
      byCurrency.set(d.currency, addDecimal(byCurrency.get(d.currency) ?? '0', d.amount));
    return [...byCurrency].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  };
  const closed = (status: 'won' | 'lost') => {
    const chosen = deals.filter((d) => d.status === status && d.pipeline.id === pipeline.id);
    return {
      count: chosen.length,
      totals: sum(chosen).map(([currency, amount]) => ({ currency, amount: Number(amount) })),
    };
  };
  return {
    stages: [...pipeline.stages]
      .sort((a, b) => a.position - b.position)
      .map((stage) => {
        const chosen = deals.filter((d) => d.status === 'open' && d.stage.id === stage.id);
        return {
          id: stage.id,
          count: chosen.length,
          totals: sum(chosen).map(([currency, amount]) => ({
            currency,
            amount: Number(amount),
            weighted: Number(percentOf(amount, stage.probability)),
          })),
        };
      }),
    won: closed('won'),
    lost: closed('lost'),
  };
}

/** Every board cell of every pipeline against the sums from the deals. */
export async function checkBoards(
  gateway: Gateway,
  key: string,
  deals: DealShown[],
  pipelines: PipelineShape[],
): Promise<string[]> {
  const mismatches: string[] = [];
  for (const pipeline of pipelines) {
    const r = await gateway.call('GET', `/api/pipelines/${pipeline.id}/board`, { key });
    if (r.status !== 200) {
      mismatches.push(`board ${pipeline.id}: ${r.status} ${r.text}`);
      continue;
    }
    const data = r.body.data;
    const shown = {
      stages: data.stages.map((s: { id: number; count: number; totals: unknown[] }) => ({
        id: s.id,
        count: s.count,
        totals: s.totals,
      })),
      won: data.won,
      lost: data.lost,
    };
    const expected = expectedBoard(deals, pipeline);
    if (JSON.stringify(shown) !== JSON.stringify(expected))
      mismatches.push(
        `board ${pipeline.name}: shows ${JSON.stringify(shown)}, deals sum to ${JSON.stringify(expected)}`,
      );
  }
  return mismatches;
}

/** A list query and the deals it should count. */
export interface DealQuery {
  query: string;
  matches: (d: DealShown) => boolean;
}

/** Every single filter (and a few AND-combinations) over the values the deals and pipelines hold. */
export function dealQueries(deals: DealShown[], pipelines: PipelineShape[], extraCurrencies: string[] = []) {
  const queries: DealQuery[] = [{ query: '', matches: () => true }];
  for (const status of ['open', 'won', 'lost'] as const) {
    queries.push({ query: `status=${status}`, matches: (d) => d.status === status });
    for (const p of pipelines)
      queries.push({
        query: `status=${status}&pipeline_id=${p.id}`,
        matches: (d) => d.status === status && d.pipeline.id === p.id,
      });
  }
  for (const p of pipelines) {
    queries.push({ query: `pipeline_id=${p.id}`, matches: (d) => d.pipeline.id === p.id });
    for (const s of p.stages)
      queries.push({ query: `stage_id=${s.id}`, matches: (d) => d.stage.id === s.id });
  }
  const currencies = new Set([...deals.map((d) => d.currency), ...extraCurrencies]);
  for (const c of currencies)
    queries.push({ query: `currency=${c.toLowerCase()}`, matches: (d) => d.currency === c });
  for (const e of new Set(deals.map((d) => d.contact.email)))
    queries.push({
      query: `contact_email=${encodeURIComponent(e.toUpperCase())}`,
      matches: (d) => d.contact.email.toLowerCase() === e.toLowerCase(),
    });
  return queries;
}

/** Each query's total (and, with `perPage`, its first page, newest first as `order` lists the deals) against the deals. */
export async function checkLists(
  gateway: Gateway,
  key: string,
  deals: DealShown[],
  queries: DealQuery[],
  options: { perPage?: number; newestFirst?: string[] } = {},
): Promise<string[]> {
  const perPage = options.perPage ?? 1;
  const mismatches: string[] = [];
  await inPool(
    8,
    queries.map(({ query, matches }) => async () => {
      const path = `/api/deals?per_page=${perPage}${query ? `&${query}` : ''}`;
      const r = await gateway.call('GET', path, { key });
      if (r.status !== 200) {
        mismatches.push(`${path}: ${r.status} ${r.text}`);
        return;
      }
      const expected = deals.filter(matches);
      if (r.body.meta.total !== expected.length)
        mismatches.push(`${path}: total ${r.body.meta.total}, recount ${expected.length}`);
      if (options.newestFirst) {
        const wanted = options.newestFirst
          .filter((u) => expected.some((d) => d.uuid === u))
          .slice(0, perPage);
        const got = r.body.data.map((d: { uuid: string }) => d.uuid);
        if (JSON.stringify(got) !== JSON.stringify(wanted))
          mismatches.push(`${path}: page ${JSON.stringify(got)}, expected ${JSON.stringify(wanted)}`);
      }
    }),
  );
  return mismatches;
}
