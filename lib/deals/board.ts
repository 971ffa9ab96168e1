import { getCachedAccountConfig } from '#lib/accounts/config-cache.ts';
import { BOARD, parseBoardCell } from '#lib/data/deals/deal-index.ts';
import { getDealStats } from '#lib/data/deals/deals.ts';
import { addDecimal, percentOf } from '#lib/decimal.ts';
import { NotFound } from '#lib/errors.ts';

/**
 * The `getPipelineBoard` route (decisions.md): per stage its open deals' count and, per currency, their
 * amount and weighted amount (the amount × the stage's probability / 100); the pipeline's won and lost deals'
 * counts and amounts per currency. Read from the deals' stats item, where every deal write keeps these exact
 * (one item, whatever the number of deals); sums are exact decimals, weighted ones computed exactly here.
 */
export async function pipelineBoard(accountId: string, ref: string) {
  const id = /^\d{1,10}$/.test(ref) ? Number(ref) : undefined;
  const [config, stats] = await Promise.all([getCachedAccountConfig(accountId), getDealStats(accountId)]);
  const pipeline = id === undefined ? undefined : config?.pipelines.find((p) => p.id === id);
  if (!pipeline) throw new NotFound();

  const cells = (counter: string, sums: string) => {
    const byId = new Map<number, { count: number; totals: Map<string, string> }>();
    for (const [value, count] of Object.entries(stats.counters[counter] ?? {})) {
      if (count === 0) continue;
      const cell = parseBoardCell(value);
      const entry = byId.get(cell.id) ?? { count: 0, totals: new Map<string, string>() };
      entry.count += count;
      entry.totals.set(cell.currency, addDecimal(0, stats.counters[sums]?.[value] ?? 0));
      byId.set(cell.id, entry);
    }
    return byId;
  };
  const open = cells(BOARD.open, BOARD.openSum);
  const closed = (counter: string, sums: string) => {
    const cell = cells(counter, sums).get(pipeline.id);
    return {
      count: cell?.count ?? 0,
      totals: [...(cell?.totals ?? [])]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([currency, amount]) => ({ currency, amount: Number(amount) })),
    };
  };
  return {
    pipeline: { id: pipeline.id, name: pipeline.name },
    stages: [...pipeline.stages]
      .sort((a, b) => a.position - b.position)
      .map((stage) => {
        const cell = open.get(stage.id);
        return {
          id: stage.id,
          name: stage.name,
          position: stage.position,
          probability: stage.probability,
          count: cell?.count ?? 0,
          totals: [...(cell?.totals ?? [])]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([currency, amount]) => ({
              currency,
              amount: Number(amount),
              weighted: Number(percentOf(amount, stage.probability)),
            })),
        };
      }),
    won: closed(BOARD.won, BOARD.wonSum),
    lost: closed(BOARD.lost, BOARD.lostSum),
  };
}
