import type { WebhookResults } from './webhook-suite.ts';
import type { CostOf } from './webhooks/cost.ts';

/**
 * The webhook part's tables (bench/results-webhooks.json of `npm run bench -- --webhooks`) as Markdown, for
 * bench/report.ts: the latency, the deliveries a second, and what the store does per delivery.
 */
export function webhookTables(r: {
  code?: { commit: string; uncommitted: string[] };
  webhooks: WebhookResults;
}): string[] {
  const w = r.webhooks;
  const out: string[] = [];
  const row = (cells: unknown[]) => out.push(`| ${cells.join(' | ')} |`);
  const s = w.settings;
  out.push(
    '',
    '### Webhooks: commit-to-delivery latency',
    '',
    `Code: commit ${r.code?.commit ?? '?'}${r.code?.uncommitted?.length ? ` with uncommitted changes (${r.code.uncommitted.join(', ')})` : ''}. The dispatcher as \`npm start\` runs it (stream reader and due runner in-process, polling every ${s.pollMs} ms; ${s.perEndpoint} attempts an endpoint, ${s.perAccount} an account, ${s.global} in all), receivers answering 200 at once. From a change's 2xx answer (in-process handler) to its verified delivery; every pair of (change, endpoint). Load average ${w.loadAverage.start.join(' / ')} at the start, ${w.loadAverage.end.join(' / ')} at the end.`,
    '',
  );
  row([
    'endpoints',
    'changes (creates + updates)',
    'changes/s',
    'p50 ms',
    'p90 ms',
    'p99 ms',
    'max ms',
    'p50 first / last endpoint',
    'delivered',
    'duplicates',
    'unverified',
    'change p50 ms',
    'load (1 min)',
  ]);
  row([
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
    '---:',
  ]);
  for (const l of w.latency)
    row([
      l.endpoints,
      `${l.changes} (${l.creates} + ${l.updates})`,
      l.perSecond,
      l.p50,
      l.p90,
      l.p99,
      l.max,
      l.firstEndpointP50 === undefined ? '—' : `${l.firstEndpointP50} / ${l.lastEndpointP50}`,
      `${l.delivered} / ${l.changes * l.endpoints}`,
      l.duplicates,
      l.unverified,
      l.changeP50,
      l.load,
    ]);
  out.push(
    '',
    '### Webhooks: deliveries a second (all endpoints on `*`, receivers answering 200 at once)',
    '',
    'The events written with the dispatcher stopped, then the dispatcher started (it resumes after its stream checkpoint); times from its start.',
    '',
  );
  row([
    'endpoints',
    'events',
    'deliveries',
    'fan-out done s',
    'first arrival s',
    'all succeeded s',
    'deliveries/s',
    'deliveries/s after the first',
    'duplicates',
    'unverified',
    'load (1 min)',
  ]);
  row(['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']);
  const sec = (ms: number) => round1(ms / 1000);
  for (const t of w.throughput)
    row([
      t.endpoints,
      t.events,
      t.deliveries,
      sec(t.fannedOutMs),
      sec(t.firstArrivalMs),
      sec(t.allSucceededMs),
      t.deliveriesPerSecond,
      t.deliveringPerSecond,
      t.duplicates,
      t.unverified,
      t.load,
    ]);
  const runs: [string, CostOf][] = [
    ...w.throughput.map((t): [string, CostOf] => [
      `${t.endpoints} endpoint${t.endpoints > 1 ? 's' : ''}, ${t.events} events at once`,
      t.cost,
    ]),
    ...w.latency.map((l): [string, CostOf] => [
      `${l.endpoints} endpoint${l.endpoints > 1 ? 's' : ''}, ${l.perSecond} changes/s`,
      l.cost,
    ]),
  ];
  /** n per d, to 3 decimals; a count too small for them shows as such, not as 0. */
  const per = (n: number, d: number) => (n > 0 && round3(n / d) === 0 ? '< 0.001' : round3(n / d));
  out.push(
    '',
    '### Webhooks: what the store does per delivery',
    '',
    "Every DynamoDB call the dispatcher made in each run, named by what it is for (bench/lib/store-calls.ts), divided by the run's deliveries. Write units are computed from the requests as test/support/dynamo-figures.ts computes them (a put by its item's size, an update or delete as an item of at most 1 KB, twice that in a transaction); gsi1's are estimated (the due entry lives on the endpoint item and gsi1 projects ALL: a write of the endpoint item while it is in the index writes the index too, 2 units when the entry moves). Read units as DynamoDB Local reports them.",
    '',
    `Item sizes as stored: ${Object.entries(w.itemBytes)
      .map(([k, v]) => `${k} ${v} B`)
      .join(', ')}.`,
    '',
    'Every delivery (the same in every run: per call, from the first run):',
    '',
  );
  const FIXED: Record<string, string> = {
    'fan-out: delivery + pending item (transaction)': 'once per (event, endpoint)',
    'attempt: claim': 'each attempt',
    'attempt: event body': 'each attempt',
    'attempt: endpoint read': 'each attempt',
    'attempt: record (transaction)': 'each attempt',
  };
  row([
    'call',
    'when',
    'items written',
    'write units',
    'gsi1 write units (est.)',
    'items read',
    'read units',
  ]);
  row(['---', '---', '---:', '---:', '---:', '---:', '---:']);
  const fixed = { itemsWritten: 0, writeUnits: 0, indexWriteUnits: 0, itemsRead: 0, readUnits: 0 };
  const first = runs[0]?.[1];
  for (const [purpose, when] of Object.entries(FIXED)) {
    const p = first?.byPurpose.find((x) => x.purpose === purpose);
    if (!p) continue;
    const one = {
      itemsWritten: round3(p.itemsWritten / p.calls),
      writeUnits: round3(p.writeUnits / p.calls),
      indexWriteUnits: round3(p.indexWriteUnits / p.calls),
      itemsRead: round3(p.itemsRead / p.calls),
      readUnits: round3(p.readUnits / p.calls),
    };
    for (const k of Object.keys(fixed) as (keyof typeof fixed)[]) fixed[k] += one[k];
    row([purpose, when, one.itemsWritten, one.writeUnits, one.indexWriteUnits, one.itemsRead, one.readUnits]);
  }
  row([
    '**one delivery, one attempt**',
    '',
    round3(fixed.itemsWritten),
    round3(fixed.writeUnits),
    round3(fixed.indexWriteUnits),
    round3(fixed.itemsRead),
    round3(fixed.readUnits),
  ]);
  out.push(
    '',
    "The rest (the runner's and the stream reader's own calls), calls per delivery, and the totals:",
    '',
  );
  row(['call', ...runs.map(([name]) => name)]);
  row(['---', ...runs.map(() => '---:')]);
  const rest = [...new Set(runs.flatMap(([, c]) => c.byPurpose.map((p) => p.purpose)))].filter(
    (p) => !(p in FIXED),
  );
  for (const purpose of rest)
    row([
      purpose,
      ...runs.map(([, c]) => {
        const p = c.byPurpose.find((x) => x.purpose === purpose);
        return p ? per(p.calls, c.deliveries) : '—';
      }),
    ]);
  const total = (name: string, of: (c: CostOf) => number) =>
    row([`**${name}**`, ...runs.map(([, c]) => `**${per(of(c), c.deliveries)}**`)]);
  total('calls per delivery, all', (c) => c.total.calls);
  total('items written per delivery', (c) => c.total.itemsWritten);
  total('write units per delivery', (c) => c.total.writeUnits);
  total('+ due index write units (est.)', (c) => c.total.indexWriteUnits);
  total('items read per delivery', (c) => c.total.itemsRead);
  total('read units per delivery', (c) => c.total.readUnits);
  row(['deliveries', ...runs.map(([, c]) => c.deliveries)]);
  const checked = w.throughput.filter((t) => t.cost.figures);
  if (checked.length > 0)
    out.push(
      '',
      `figuresOf (test/support/dynamo-figures.ts) over the same windows: ${checked
        .map(
          (t) =>
            `${t.endpoints} endpoint${t.endpoints > 1 ? 's' : ''}: ${t.cost.figures?.calls} calls, ${t.cost.figures?.writeUnits} write units, ${t.cost.figures?.itemsRead} items read (${t.cost.figures?.agrees ? 'agrees' : 'DISAGREES'})`,
        )
        .join('; ')}; its items written leave out DeleteItem.`,
    );
  out.push(
    '',
    `Idle (nothing to deliver), over ${w.idle.seconds} s: ${w.idle.byPurpose.map((p) => `${p.purpose} ${p.calls}/s (${p.readUnits} RU/s)`).join(', ') || 'no call'}.`,
  );
  if (w.dispatcherLog.length > 0) out.push('', `The dispatcher logged: ${w.dispatcherLog.join('; ')}`);
  return out;
}

function round1(n: number) {
  return Math.round(n * 10) / 10;
}

function round3(n: number) {
  return Math.round(n * 1000) / 1000;
}
