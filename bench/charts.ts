/**
 * SVG charts of bench/results.json, hand-written so docs/ needs no chart library: pure functions from the
 * results to SVG text. Every series, size and label is derived from the data, so shapes may be added or
 * renamed in bench/suite.ts without touching this file.
 */

/** The parts of bench/results.json the charts read. */
export interface ChartResults {
  mode?: string;
  startedAt?: string;
  machine?: { store?: string };
  endpoints?: { name: string; capacity: number; itemsRead: number; itemsWritten: number }[];
  scaling?: SizeRun[];
  deals?: { scaling?: SizeRun[] };
}

type SizeRun = { size: number; results: { name: string; p50: number | null; capacity: number | null }[] };

const WIDTH = 760;
const FONT = 'font-family="sans-serif"';
/** Tableau-like palette: distinct on white and for the common colour-vision deficiencies as far as 12 go. */
const PALETTE = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
  '#393b79',
  '#ad494a',
];
/** Once the palette is used up the colours repeat with the next dash pattern. */
const DASHES = ['', '7 4', '2 3', '10 3 2 3'];
/** Marker shapes also change with each pass over the palette. */
const MARKERS = ['circle', 'square', 'triangle', 'diamond'] as const;

interface Series {
  name: string;
  points: { x: number; y: number; clamped: boolean }[];
}

/** p50 of each list shape by account size, log-log. */
export function scalingChart(results: ChartResults): string {
  return sizeChart(results, {
    title: 'List request p50 by account size',
    yTitle: 'p50 ms (log scale)',
    value: (r) => r.p50,
    unit: 'ms',
    floor: 0,
  });
}

/** p50 of each deal list shape and of the board by the account's deals, log-log. */
export function dealScalingChart(results: ChartResults): string {
  return sizeChart(
    { ...results, scaling: results.deals?.scaling ?? [] },
    {
      title: 'Deal list and board p50 by deals in the account',
      yTitle: 'p50 ms (log scale)',
      value: (r) => r.p50,
      unit: 'ms',
      floor: 0,
      entities: 'deals',
    },
  );
}

/** Consumed capacity units per request of each list shape by account size, log-log. */
export function capacityChart(results: ChartResults): string {
  return sizeChart(results, {
    title: 'List request capacity by account size',
    yTitle: 'capacity units per request (log scale)',
    value: (r) => r.capacity,
    unit: 'CU',
    floor: 0.5,
  });
}

/** Horizontal bars: consumed capacity units per request of each endpoint, annotated with items read/written. */
export function endpointCapacityChart(results: ChartResults): string {
  const endpoints = (results.endpoints ?? []).filter((e) => Number.isFinite(e.capacity));
  const labelWidth = Math.min(300, 24 + Math.max(0, ...endpoints.map((e) => textWidth(e.name, 12))));
  const annotationWidth = 170;
  const left = labelWidth;
  const right = WIDTH - annotationWidth;
  const top = 74;
  const barStep = 24;
  const plotHeight = Math.max(1, endpoints.length) * barStep;
  const height = top + plotHeight + 50;
  const max = niceLinearMax(Math.max(0, ...endpoints.map((e) => e.capacity)));
  const ticks = linearTicks(max);
  const x = (v: number) => left + ((right - left) * v) / max;
  const out = svgOpen(height, 'Endpoint capacity per request');
  out.push(...header('Endpoint capacity per request', subtitle(results)));
  for (const t of ticks) {
    out.push(
      line(x(t), top, x(t), top + plotHeight, t === 0 ? '#444' : '#e3e3e3'),
      text(x(t), top + plotHeight + 16, formatNumber(t), { anchor: 'middle', size: 11, fill: '#444' }),
    );
  }
  endpoints.forEach((e, i) => {
    const y = top + i * barStep;
    const w = Math.max(0, x(e.capacity) - left);
    out.push(
      text(left - 8, y + barStep / 2 + 4, truncate(e.name, labelWidth - 12, 12), { anchor: 'end', size: 12 }),
      `<rect x="${fmt(left)}" y="${fmt(y + 4)}" width="${fmt(w)}" height="${barStep - 8}" fill="${PALETTE[0]}"><title>${escapeXml(
        `${e.name}: ${formatNumber(e.capacity)} capacity units, ${e.itemsRead} items read, ${e.itemsWritten} written`,
      )}</title></rect>`,
      text(x(e.capacity) + 6, y + barStep / 2 + 4, formatNumber(e.capacity), {
        size: 12,
        weight: 'bold',
      }),
      text(right + 24, y + barStep / 2 + 4, `${e.itemsRead} read · ${e.itemsWritten} written`, {
        size: 11,
        fill: '#555',
      }),
    );
  });
  out.push(
    text((left + right) / 2, top + plotHeight + 36, 'capacity units per request', {
      anchor: 'middle',
      size: 12,
    }),
    text(right + 24, top - 6, 'items', { size: 11, fill: '#555' }),
    '</svg>',
  );
  return out.join('\n');
}

interface SizeChartOptions {
  title: string;
  yTitle: string;
  value: (r: { p50: number | null; capacity: number | null }) => number | null;
  unit: string;
  /** Values at or below this are drawn at it (0 on a log axis); 0 = no clamping. */
  floor: number;
  /** What the account size counts (tickets unless said). */
  entities?: string;
}

function sizeChart(results: ChartResults, o: SizeChartOptions): string {
  const runs = [...(results.scaling ?? [])].sort((a, b) => a.size - b.size);
  const sizes = [...new Set(runs.map((s) => s.size))];
  const byName = new Map<string, Series>();
  for (const run of runs)
    for (const r of run.results) {
      const v = o.value(r);
      if (v === null || v === undefined || !Number.isFinite(v)) continue;
      if (v <= 0 && o.floor <= 0) continue;
      let s = byName.get(r.name);
      if (!s) {
        s = { name: r.name, points: [] };
        byName.set(r.name, s);
      }
      const clamped = v < o.floor || v <= 0;
      s.points.push({ x: run.size, y: clamped ? o.floor : v, clamped });
    }
  const series = [...byName.values()];
  const anyClamped = series.some((s) => s.points.some((p) => p.clamped));
  const ys = series.flatMap((s) => s.points.map((p) => p.y));

  // Layout: title block, plot, x-axis, then a legend table below: one row per shape with its value at
  // each size, which also tells apart lines that lie on top of each other.
  const left = 70;
  const right = WIDTH - 24;
  const top = 64;
  const plotHeight = 340;
  const bottom = top + plotHeight;
  const legendTop = bottom + 72;
  const legendRow = 18;
  const noteHeight = anyClamped ? 22 : 0;
  const height = legendTop + series.length * legendRow + noteHeight + 14;

  const xDomain = sizes.length
    ? [(sizes[0] as number) / 1.6, (sizes[sizes.length - 1] as number) * 1.6]
    : [1, 10];
  // A little headroom so points do not sit on the frame.
  const yDomain = ys.length ? niceLogDomain(Math.min(...ys) / 1.15, Math.max(...ys) * 1.15) : [1, 10];
  const xs = logScale(xDomain as [number, number], [left, right]);
  const yScale = logScale(yDomain as [number, number], [bottom, top]);

  const out = svgOpen(height, o.title);
  out.push(...header(o.title, subtitle(results)));

  // Grid and y ticks.
  for (const t of logTicks(yDomain[0] as number, yDomain[1] as number)) {
    const y = yScale(t.value);
    out.push(line(left, y, right, y, t.major ? '#d0d0d0' : '#eeeeee'));
    if (t.label)
      out.push(text(left - 8, y + 4, formatNumber(t.value), { anchor: 'end', size: 11, fill: '#444' }));
  }
  // x ticks: the sizes that were measured.
  for (const size of sizes) {
    const x = xs(size);
    out.push(
      line(x, top, x, bottom, '#eeeeee'),
      line(x, bottom, x, bottom + 5, '#444'),
      text(x, bottom + 19, formatSize(size), { anchor: 'middle', size: 11, fill: '#444' }),
    );
  }
  out.push(
    `<rect x="${left}" y="${top}" width="${right - left}" height="${plotHeight}" fill="none" stroke="#999"/>`,
    text((left + right) / 2, bottom + 38, `account size (${o.entities ?? 'tickets'}, log scale)`, {
      anchor: 'middle',
      size: 12,
    }),
    `<text transform="translate(18 ${fmt((top + bottom) / 2)}) rotate(-90)" text-anchor="middle" ${FONT} font-size="12" fill="#222">${escapeXml(o.yTitle)}</text>`,
  );

  // Lines, drawn so the first series ends up on top.
  const styled = series.map((s, i) => ({ ...s, ...style(i) }));
  for (const s of [...styled].reverse()) {
    const pts = s.points.map((p) => `${fmt(xs(p.x))},${fmt(yScale(p.y))}`).join(' ');
    out.push(
      `<g><title>${escapeXml(s.name)}</title><polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="2"${
        s.dash ? ` stroke-dasharray="${s.dash}"` : ''
      } stroke-linejoin="round"/>`,
    );
    for (const p of s.points)
      out.push(
        marker(
          s.marker,
          xs(p.x),
          yScale(p.y),
          s.color,
          `${s.name}: ${formatSize(p.x)} → ${pointLabel(p, o)}`,
        ),
      );
    out.push('</g>');
  }

  // Legend table in the order the shapes were measured: swatch, name, then the value at each size.
  const valueColumn = 64;
  const valuesLeft = right - sizes.length * valueColumn;
  const nameLeft = left + 36;
  const headerY = legendTop - 14;
  out.push(
    line(left, headerY + 5, right, headerY + 5, '#d0d0d0'),
    text(nameLeft, headerY, `list shape (${o.unit} at each account size)`, { size: 11, fill: '#555' }),
  );
  sizes.forEach((size, j) => {
    out.push(
      text(valuesLeft + (j + 1) * valueColumn, headerY, formatSize(size), {
        anchor: 'end',
        size: 11,
        fill: '#555',
      }),
    );
  });
  styled.forEach((s, i) => {
    const y = legendTop + i * legendRow;
    if (i % 2 === 1)
      out.push(
        `<rect x="${left}" y="${fmt(y - legendRow / 2 - 1)}" width="${right - left}" height="${legendRow}" fill="#f6f6f6"/>`,
      );
    out.push(
      `<line x1="${fmt(left)}" y1="${fmt(y)}" x2="${fmt(left + 28)}" y2="${fmt(y)}" stroke="${s.color}" stroke-width="2"${
        s.dash ? ` stroke-dasharray="${s.dash}"` : ''
      }/>`,
      marker(s.marker, left + 14, y, s.color),
      text(nameLeft, y + 4, truncate(s.name, valuesLeft - nameLeft - 8, 12), { size: 12 }),
    );
    sizes.forEach((size, j) => {
      const p = s.points.find((q) => q.x === size);
      out.push(
        text(valuesLeft + (j + 1) * valueColumn, y + 4, p ? (p.clamped ? '0' : formatNumber(p.y)) : '–', {
          anchor: 'end',
          size: 12,
          fill: p ? '#222' : '#999',
        }),
      );
    });
  });
  if (anyClamped)
    out.push(
      text(
        left,
        legendTop + series.length * legendRow + 8,
        `Values of 0 ${o.unit} are drawn at ${formatNumber(o.floor)} (a log axis has no 0).`,
        { size: 11, fill: '#555', style: 'italic' },
      ),
    );
  out.push('</svg>');
  return out.join('\n');
}

function pointLabel(p: { y: number; clamped: boolean }, o: SizeChartOptions): string {
  return p.clamped ? `0 ${o.unit} (drawn at ${formatNumber(o.floor)})` : `${formatNumber(p.y)} ${o.unit}`;
}

function style(i: number) {
  const pass = Math.floor(i / PALETTE.length);
  return {
    color: PALETTE[i % PALETTE.length] as string,
    dash: DASHES[pass % DASHES.length] as string,
    marker: MARKERS[pass % MARKERS.length] as (typeof MARKERS)[number],
  };
}

function marker(
  shape: (typeof MARKERS)[number],
  x: number,
  y: number,
  color: string,
  title?: string,
): string {
  const t = title ? `<title>${escapeXml(title)}</title>` : '';
  const close = (tag: string) => (t ? `>${t}</${tag}>` : '/>');
  switch (shape) {
    case 'circle':
      return `<circle cx="${fmt(x)}" cy="${fmt(y)}" r="3.5" fill="${color}"${close('circle')}`;
    case 'square':
      return `<rect x="${fmt(x - 3.2)}" y="${fmt(y - 3.2)}" width="6.4" height="6.4" fill="${color}"${close('rect')}`;
    case 'triangle':
      return `<polygon points="${fmt(x)},${fmt(y - 4.2)} ${fmt(x + 4)},${fmt(y + 3)} ${fmt(x - 4)},${fmt(y + 3)}" fill="${color}"${close('polygon')}`;
    case 'diamond':
      return `<polygon points="${fmt(x)},${fmt(y - 4.5)} ${fmt(x + 4.5)},${fmt(y)} ${fmt(x)},${fmt(y + 4.5)} ${fmt(x - 4.5)},${fmt(y)}" fill="${color}"${close('polygon')}`;
  }
}

// ---- primitives ----

/** The opening of a chart, with its title as the SVG's accessible name. */
function svgOpen(height: number, title: string): string[] {
  const h = Math.round(height);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${h}" viewBox="0 0 ${WIDTH} ${h}" ${FONT}>`,
    `<title>${escapeXml(title)}</title>`,
    // An opaque background keeps the dark text readable in GitHub's dark theme.
    `<rect width="${WIDTH}" height="${h}" fill="#ffffff"/>`,
  ];
}

function header(title: string, sub: string): string[] {
  return [
    text(WIDTH / 2, 24, title, { anchor: 'middle', size: 16, weight: 'bold' }),
    ...(sub ? [text(WIDTH / 2, 44, sub, { anchor: 'middle', size: 11, fill: '#555' })] : []),
  ];
}

function subtitle(results: ChartResults): string {
  return [
    results.mode ? `${results.mode} run` : '',
    results.startedAt ? results.startedAt.slice(0, 10) : '',
    results.machine?.store ?? '',
    'in-process, warm',
  ]
    .filter(Boolean)
    .join(' · ');
}

function text(
  x: number,
  y: number,
  s: string,
  o: {
    anchor?: 'start' | 'middle' | 'end';
    size?: number;
    fill?: string;
    weight?: string;
    style?: string;
  } = {},
): string {
  const attrs = [
    `x="${fmt(x)}"`,
    `y="${fmt(y)}"`,
    o.anchor && o.anchor !== 'start' ? `text-anchor="${o.anchor}"` : '',
    `font-size="${o.size ?? 12}"`,
    `fill="${o.fill ?? '#222'}"`,
    o.weight ? `font-weight="${o.weight}"` : '',
    o.style ? `font-style="${o.style}"` : '',
  ].filter(Boolean);
  return `<text ${attrs.join(' ')}>${escapeXml(s)}</text>`;
}

function line(x1: number, y1: number, x2: number, y2: number, stroke: string): string {
  return `<line x1="${fmt(x1)}" y1="${fmt(y1)}" x2="${fmt(x2)}" y2="${fmt(y2)}" stroke="${stroke}" stroke-width="1"/>`;
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function fmt(n: number): string {
  return String(Math.round(n * 10) / 10);
}

/** Rough width of sans-serif text: enough to size margins and truncate, not to typeset. */
function textWidth(s: string, size: number): number {
  return s.length * size * 0.6;
}

function truncate(s: string, width: number, size: number): string {
  const max = Math.floor(width / (size * 0.6));
  return s.length <= max ? s : `${s.slice(0, Math.max(1, max - 1))}…`;
}

// ---- scales ----

function logScale([d0, d1]: [number, number], [r0, r1]: [number, number]) {
  const l0 = Math.log10(d0);
  const span = Math.log10(d1) - l0 || 1;
  return (v: number) => r0 + ((r1 - r0) * (Math.log10(v) - l0)) / span;
}

/** The 1-2-5 steps just outside [min, max], at least one step apart. */
function niceLogDomain(min: number, max: number): [number, number] {
  const steps = [1, 2, 5];
  const down = (v: number) => {
    const e = Math.floor(Math.log10(v));
    for (const s of [...steps].reverse()) if (s * 10 ** e <= v * (1 + 1e-9)) return s * 10 ** e;
    return 10 ** e;
  };
  const up = (v: number) => {
    const e = Math.floor(Math.log10(v));
    for (const s of [...steps, 10]) if (s * 10 ** e >= v * (1 - 1e-9)) return s * 10 ** e;
    return 10 ** (e + 1);
  };
  let lo = down(min);
  let hi = up(max);
  if (hi / lo < 10) {
    lo = down(lo / 1.5);
    hi = up(hi * 1.5);
  }
  return [lo, hi];
}

/** Decades are major; 2 and 5 get gridlines, and labels while the axis spans few decades. */
function logTicks(lo: number, hi: number): { value: number; major: boolean; label: boolean }[] {
  const decades = Math.log10(hi / lo);
  const ticks: { value: number; major: boolean; label: boolean }[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
    for (const s of [1, 2, 5]) {
      const value = s * 10 ** e;
      if (value < lo * (1 - 1e-9) || value > hi * (1 + 1e-9)) continue;
      ticks.push({ value, major: s === 1, label: s === 1 || decades <= 4.5 });
    }
  return ticks;
}

function niceLinearMax(max: number): number {
  if (max <= 0) return 1;
  const e = 10 ** Math.floor(Math.log10(max));
  for (const s of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (s * e >= max) return s * e;
  return 10 * e;
}

function linearTicks(max: number): number[] {
  const raw = max / 6;
  const e = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((s) => s * e).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) ticks.push(Math.round(v * 1e6) / 1e6);
  return ticks;
}

function formatNumber(v: number): string {
  return v.toLocaleString('en', { maximumFractionDigits: 2 });
}

/** 1000 → "1k", 100000 → "100k", 1000000 → "1M", 2500 → "2.5k". */
function formatSize(n: number): string {
  if (n >= 1e6) return `${+(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${+(n / 1e3).toFixed(2)}k`;
  return String(n);
}
