import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { capacityChart, dealScalingChart, endpointCapacityChart, scalingChart } from './charts.ts';
import type { EventResults } from './event-suite.ts';
import { webhookTables } from './webhook-report.ts';

/**
 * Renders bench/results.json (or the file named: bench/results-deals.json of `--deals`, bench/results-events.json
 * of `--events`, bench/results-webhooks.json of `--webhooks`) as the Markdown tables of docs/performance.md
 * (`npx tsx bench/report.ts [file] [--charts]`), and with `--charts` writes its charts to docs/bench-*.svg, printing the Markdown image links
 * after the tables. Sections the file lacks are left out.
 */
const file =
  process.argv.slice(2).find((a) => !a.startsWith('--')) ?? join(import.meta.dirname, 'results.json');
/** Charts are written into docs/ only when asked (`--charts`, as bench:publish does): rendering the tables of a
 * run must not change committed files. */
const writeCharts = process.argv.includes('--charts');
const r = JSON.parse(readFileSync(file, 'utf8'));
const tickets = r.endpoints !== undefined;
const out: string[] = [];
const row = (cells: unknown[]) => out.push(`| ${cells.join(' | ')} |`);

out.push(
  `Run: ${r.mode}, ${r.startedAt} → ${r.finishedAt}; ${r.machine.cpu}, ${r.machine.cores} cores, ${r.machine.memoryGb} GB; Node ${r.machine.node}; ${r.machine.store}.`,
  '',
);
const endpointHeader = [
  'request',
  'p50 ms',
  'p99 ms',
  'round trips',
  'operations',
  'items read',
  'items written',
  'capacity',
  'budget ms',
  'p50 / floor-sum',
];
const endpointRow = (
  e: Record<string, unknown> & {
    operations: string[][];
    p50: number;
    budgetMs: number;
    withinBudget: boolean;
  },
) =>
  row([
    e.name,
    e.p50,
    e.p99,
    e.roundTrips,
    e.operations.map(describeRoundTrip).join(' → '),
    e.itemsRead,
    e.itemsWritten,
    e.capacity,
    `${e.budgetMs} ${e.withinBudget ? '✓' : '✗'}`,
    (e.p50 / (e.budgetMs / 1.3)).toFixed(2),
  ]);
out.push('### Floor', '');
row(['operation', 'p50 ms', 'p99 ms']);
row(['---', '---:', '---:']);
for (const [op, t] of Object.entries(r.floor) as [string, { p50: number; p99: number }][])
  row([op, t.p50, t.p99]);
if (tickets) renderTickets();
if (r.deals) renderDeals(r.deals);
if (r.events) renderEvents(r.events);
if (r.webhooks) out.push(...webhookTables(r));

function renderTickets() {
  row([
    `TransactWriteItems, ${r.sizedTransactionFloor.items} items (a create's size)`,
    r.sizedTransactionFloor.p50,
    r.sizedTransactionFloor.p99,
  ]);
  out.push('', '### Endpoints (in-process, warm)', '');
  row(endpointHeader);
  row(endpointHeader.map((_, i) => (i === 0 || i === 4 ? '---' : '---:')));
  for (const e of r.endpoints) endpointRow(e);
  for (const s of r.scaling) {
    out.push('', `### List at ${s.size.toLocaleString('en')} tickets (seeded in ${s.seedSeconds} s)`, '');
    row(endpointHeader);
    row(endpointHeader.map((_, i) => (i === 0 || i === 4 ? '---' : '---:')));
    for (const e of s.results) endpointRow(e);
  }
  out.push('', '### Scaling (p50 at the largest size / p50 at the first size that has the page)', '');
  row(['query shape', 'from', 'to', 'ratio', 'budget 1.5']);
  row(['---', '---:', '---:', '---:', '---']);
  for (const s of r.scalingRatios)
    row([
      s.name,
      s.from,
      s.to,
      Number.isNaN(s.ratio) || s.ratio === null ? 'n/a' : s.ratio,
      s.exempt ? 'exempt (cost model)' : s.withinBudget ? '✓' : '✗',
    ]);
  out.push('', '### HTTP through the local gateway (16 connections)', '');
  row(['request', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'in-process p50 ms', 'HTTP p50 / in-process p50']);
  row(['---', '---:', '---:', '---:', '---:', '---:', '---:']);
  for (const h of r.http)
    row([h.name, h.requestsPerSecond, h.p50Ms, h.p99Ms, h.non2xx, h.inProcessP50Ms, h.p50Ratio]);
  if (r.mixed) {
    out.push('', '### Mixed workload over HTTP, at once, on the largest account', '');
    row(['request', 'connections', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors']);
    row(['---', '---:', '---:', '---:', '---:', '---:', '---:']);
    for (const h of r.mixed)
      row([h.name, h.connections, h.requestsPerSecond, h.p50Ms, h.p99Ms, h.non2xx, h.errors]);
  }
  out.push('', `Peak RSS of the gateway process under that load: ${r.peakRssMb} MB.`, '');
  out.push('### Cold start', '');
  row(['bundle', 'size KB', 'module load ms', '× baseline', 'budget (≤ 400 KB, ≤ 1.15×)']);
  row(['---', '---:', '---:', '---:', '---']);
  row([
    r.coldStart.baseline.name,
    Math.round(r.coldStart.baseline.bytes / 1024),
    r.coldStart.baseline.loadMs,
    1,
    '',
  ]);
  for (const f of r.coldStart.functions) {
    const b = r.coldStart.budgets.find((x: { name: string }) => x.name === f.name);
    row([f.name, Math.round(f.bytes / 1024), f.loadMs, f.loadRatio, b.sizeOk && b.loadOk ? '✓' : '✗']);
  }
}

function renderDeals(d: {
  contacts: number;
  scaling: { size: number; seedSeconds: number; results: Parameters<typeof endpointRow>[0][] }[];
  writes: {
    size: number;
    results: (Parameters<typeof endpointRow>[0] & { floorMs: number; p50OverFloor: number })[];
  }[];
  transactionFloors: { name: string; items: number; p50: number; p99: number }[];
  scalingRatios: { name: string; from: number; to: number; ratio: number | null; withinBudget: boolean }[];
  mixed: {
    name: string;
    connections: number;
    requestsPerSecond: number;
    p50Ms: number;
    p99Ms: number;
    non2xx: number;
    errors: number;
  }[];
}) {
  for (const s of d.scaling) {
    out.push(
      '',
      `### Deals: lists and the board at ${s.size.toLocaleString('en')} deals, ${d.contacts.toLocaleString('en')} contacts (seeded in ${s.seedSeconds} s)`,
      '',
    );
    row(endpointHeader);
    row(endpointHeader.map((_, i) => (i === 0 || i === 4 ? '---' : '---:')));
    for (const e of s.results) endpointRow(e);
  }
  out.push('', '### Deals: scaling (p50 at the largest size / p50 at the smallest, same run)', '');
  row(['shape', 'from', 'to', 'ratio', 'budget 1.5']);
  row(['---', '---:', '---:', '---:', '---']);
  for (const s of d.scalingRatios)
    row([s.name, s.from, s.to, s.ratio ?? 'n/a', s.ratio === null ? 'n/a' : s.withinBudget ? '✓' : '✗']);
  out.push(
    '',
    '### Deals: one deal and one contact against their floor',
    '',
    "Floor = Σ over round trips of the slowest operation's floor, a write's TransactWriteItems being one of the",
    `request's own size (${d.transactionFloors.map((t) => `${t.name}: ${t.items} items, p50 ${t.p50} ms`).join('; ')}).`,
    '',
  );
  row([
    'deals',
    'request',
    'p50 ms',
    'p99 ms',
    'round trips',
    'operations',
    'items read',
    'items written',
    'floor ms',
    'p50 / floor',
  ]);
  row(['---:', '---', '---:', '---:', '---:', '---', '---:', '---:', '---:', '---:']);
  for (const w of d.writes)
    for (const e of w.results)
      row([
        w.size,
        e.name,
        e.p50,
        e.p99,
        e.roundTrips,
        e.operations.map(describeRoundTrip).join(' → '),
        e.itemsRead,
        e.itemsWritten,
        e.floorMs,
        e.p50OverFloor,
      ]);
  out.push('', '### Deals: mixed workload over HTTP, at once, on the largest account', '');
  row(['request', 'connections', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors']);
  row(['---', '---:', '---:', '---:', '---:', '---:', '---:']);
  for (const h of d.mixed)
    row([h.name, h.connections, h.requestsPerSecond, h.p50Ms, h.p99Ms, h.non2xx, h.errors]);
}

function renderEvents(e: EventResults) {
  const before = e.writes.find((w) => w.previous)?.previous;
  const sources = [
    ...new Set(
      e.writes.flatMap((w) => (w.previous ? [`${w.previous.source} (${w.previous.startedAt})`] : [])),
    ),
  ];
  out.push(
    '',
    '### Events: writes with events on, beside the committed run from before events',
    '',
    `Each cell: now / before (before: ${sources.join('; ') || 'none'}${before?.hadEvents ? ', a run with events' : ''}). p50 / floor: the p50 over the sum of its round trips' floors on the same run's store. Write units are computed from the requests (DynamoDB Local under-reports a transaction's); the runs before did not record them.`,
    '',
  );
  row([
    'request',
    'p50 ms',
    'p50 / floor',
    'round trips',
    'operations (now)',
    'items written',
    'write units (now)',
  ]);
  row(['---', '---:', '---:', '---:', '---', '---:', '---:']);
  const pair = (now: number, was: number | undefined) => `${now} / ${was ?? '—'}`;
  for (const w of e.writes)
    row([
      w.name,
      pair(w.p50, w.previous?.p50),
      pair(w.p50OverFloor, w.previous?.p50OverFloor),
      pair(w.roundTrips, w.previous?.roundTrips),
      w.operations.map(describeRoundTrip).join(' → '),
      pair(w.itemsWritten, w.previous?.itemsWritten),
      w.writeUnits,
    ]);
  out.push('', '### Events: the seeded events (bodies of real events of each type)', '');
  row(['type', 'JSON body bytes', 'item bytes (≈)', 'WCU as a put in a transaction']);
  row(['---', '---:', '---:', '---:']);
  for (const s of e.feed.eventSizes) row([s.type, s.bodyBytes, s.itemBytes, s.transactionWriteUnits]);
  const sizes = e.feed.scaling.map((s) => s.size);
  out.push(
    '',
    `### Events: a feed page (GET /api/events, limit 100, after the middle event) at ${sizes.map((n) => n.toLocaleString('en')).join(' / ')} events in one account`,
    '',
    `Seeded in ${e.feed.scaling.map((s) => `${s.seedSeconds} s`).join(' / ')}. Type mix: ${e.feed.mix.join(', ')} (repeated).`,
    '',
  );
  row([
    'shape',
    ...sizes.map((n) => `p50 ms at ${n.toLocaleString('en')}`),
    'p99 ms (largest)',
    'round trips',
    'items read',
    'capacity',
    `${sizes.at(-1)?.toLocaleString('en')} / ${sizes[0]?.toLocaleString('en')}`,
  ]);
  row(['---', ...sizes.map(() => '---:'), '---:', '---:', '---:', '---:', '---:']);
  for (const ratio of e.feed.ratios) {
    const at = e.feed.scaling.map((s) => s.results.find((x) => x.name === ratio.name));
    const last = at.at(-1);
    row([
      ratio.name,
      ...at.map((x) => x?.p50 ?? '—'),
      last?.p99 ?? '—',
      [...new Set(at.map((x) => x?.roundTrips))].join(' / '),
      [...new Set(at.map((x) => x?.itemsRead))].join(' / '),
      [...new Set(at.map((x) => x?.capacity))].join(' / '),
      ratio.ratio === null || Number.isNaN(ratio.ratio)
        ? 'n/a'
        : `${ratio.ratio} ${ratio.withinBudget ? '✓' : '✗'}`,
    ]);
  }
  out.push(
    '',
    '### Events: the hot items of one account (N writers, each PATCHing its own ticket)',
    '',
    e.hot.note,
    '',
  );
  row([
    'PATCH',
    'writers',
    'seconds',
    'events/s',
    'events',
    'places taken',
    'p50 ms',
    'p99 ms',
    '200',
    '503',
    'conflicts',
    'other failures',
  ]);
  row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---']);
  for (const h of e.hot.runs) {
    const other = Object.entries(h.failures).filter(([k]) => !k.includes('TransactionConflict'));
    row([
      h.kind,
      h.writers,
      h.seconds,
      h.eventsPerSecond,
      h.eventsCommitted,
      h.placesTaken,
      h.p50Ms,
      h.p99Ms,
      h.answers['200'] ?? 0,
      h.answers['503'] ?? 0,
      h.conflicts,
      other.length ? other.map(([k, n]) => `${k} ×${n}`).join(', ') : '0',
    ]);
  }
}

const docs = join(import.meta.dirname, '..', 'docs');
mkdirSync(docs, { recursive: true });
type Chart = [file: string, alt: string, svg: string];
const charts: Chart[] = [];
if (tickets)
  charts.push(
    ['bench-p50-by-size.svg', 'p50 by account size', scalingChart(r)],
    ['bench-capacity-by-size.svg', 'capacity per request by account size', capacityChart(r)],
    ['bench-endpoint-capacity.svg', 'capacity per request by endpoint', endpointCapacityChart(r)],
  );
if (r.deals)
  charts.push(['bench-deals-p50-by-size.svg', 'deal list and board p50 by deals', dealScalingChart(r)]);
out.push('', '### Charts');
for (const [file, alt, svg] of charts) {
  if (writeCharts) writeFileSync(join(docs, file), `${svg}\n`);
  out.push('', `![${alt}](${file})`);
}
process.stdout.write(`${out.join('\n')}\n`);

/** "BatchGetItem ‖ BatchGetItem ‖ Query" → "BatchGetItem ×2 ‖ Query". */
function describeRoundTrip(operations: string[]): string {
  const counts = new Map<string, number>();
  for (const op of operations) counts.set(op, (counts.get(op) ?? 0) + 1);
  return [...counts].map(([op, n]) => (n > 1 ? `${op} ×${n}` : op)).join(' ‖ ');
}
