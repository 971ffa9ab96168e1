import { createHash } from 'node:crypto';

/**
 * A digest of a source record as written (issue 42): SHA-256 of its canonical JSON (object keys sorted), so the same
 * record read again, whatever the order of its fields, gives the same digest, and a source key (lib/data/imports/
 * source-keys.ts) tells `unchanged` from `updated` without reading the object.
 */
export function recordDigest(record: unknown): string {
  return createHash('sha256').update(canonical(record)).digest('base64url');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}
