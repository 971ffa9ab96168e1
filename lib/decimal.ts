/**
 * Exact decimal arithmetic on decimal strings (`"0.1"`, `"-12.50"`), for money sums: ten deals of 0.1 sum to
 * `"1"`, not 0.9999999999999999. DynamoDB numbers are exact decimals too (38 digits), so sums kept there and
 * deltas computed here never meet a binary float.
 */
const DECIMAL = /^-?\d+(\.\d+)?$/;

interface Scaled {
  units: bigint;
  scale: number;
}

function scaled(value: string | number): Scaled {
  const text = typeof value === 'number' ? numberText(value) : value.trim();
  if (!DECIMAL.test(text)) throw new Error(`not a decimal: ${text}`);
  const negative = text.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const units = BigInt(`${whole}${fraction}`);
  return { units: negative ? -units : units, scale: fraction.length };
}

/** A JS number's shortest decimal text, its exponent written out (`1e-7` → `0.0000001`, `1e21` → `1000…`). */
function numberText(value: number): string {
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  const written = String(value);
  const exponent = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(written);
  if (!exponent) return written;
  const [, sign = '', whole = '', fraction = '', power = '0'] = exponent;
  const digits = `${whole}${fraction}`;
  const point = whole.length + Number(power);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

function rescale(x: Scaled, scale: number): bigint {
  return x.units * 10n ** BigInt(scale - x.scale);
}

function text({ units, scale }: Scaled): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, '');
  const out = fraction ? `${whole}.${fraction}` : whole;
  return negative && out !== '0' ? `-${out}` : out;
}

/** a + b, exactly. */
export function addDecimal(a: string | number, b: string | number): string {
  const x = scaled(a);
  const y = scaled(b);
  const scale = Math.max(x.scale, y.scale);
  return text({ units: rescale(x, scale) + rescale(y, scale), scale });
}

/** −a, exactly. */
export function negateDecimal(a: string | number): string {
  const x = scaled(a);
  return text({ units: -x.units, scale: x.scale });
}

/** a × percent / 100, exactly (a weighted amount: the sum of a stage times its probability). */
export function percentOf(a: string | number, percent: number): string {
  if (!Number.isInteger(percent)) throw new Error(`not an integer percentage: ${percent}`);
  const x = scaled(a);
  return text({ units: x.units * BigInt(percent), scale: x.scale + 2 });
}

/** Whether a decimal is zero. */
export function isZeroDecimal(a: string | number): boolean {
  return scaled(a).units === 0n;
}

/** Digits after the decimal point a number is written with (`12.50` → 2, `1e-7` → 7). */
export function fractionDigits(value: string | number): number {
  return scaled(value).scale;
}
