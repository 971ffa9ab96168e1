import { expect } from 'vitest';
import type { Gateway } from './http.ts';
import { withRetries } from './retries.ts';
import { searchMatches } from './ticket-model.ts';

/**
 * A model of the ticket list for tests that race or fault writes: which tickets a filter must list, computed
 * from every ticket as GET shows it, and a check of a filter's pages against it.
 */

/** A ticket as GET /api/tickets/{uuid} shows it. */
export interface Shown {
  uuid: string;
  reference: string;
  subject: string;
  created_at: string;
  status: string;
  priority: string;
  assignee: { id: number } | null;
  requester: { email: string };
  custom_fields: Record<string, string | number | boolean | null>;
}

export interface Filter {
  status?: string;
  priority?: string;
  assignee_id?: number;
  requester_email?: string;
  custom_fields?: [string, string][];
  search?: string;
}

const text = (v: string | number | boolean | null) => (typeof v === 'string' ? v : JSON.stringify(v));

export function matches(t: Shown, f: Filter): boolean {
  if (f.status !== undefined && t.status !== f.status) return false;
  if (f.priority !== undefined && t.priority !== f.priority) return false;
  if (f.assignee_id !== undefined && t.assignee?.id !== f.assignee_id) return false;
  if (f.requester_email !== undefined && t.requester.email.toLowerCase() !== f.requester_email.toLowerCase())
    return false;
  for (const [k, v] of f.custom_fields ?? []) {
    if (!(k in t.custom_fields) || text(t.custom_fields[k] as never) !== v) return false;
  }
  if (
    f.search !== undefined &&
    f.search.trim() !== '' &&
    !searchMatches({ ...t, email: t.requester.email }, f.search)
  )
    return false;
  return true;
}

export function queryOf(f: Filter, page: number, perPage: number): string {
  const parts = [`page=${page}`, `per_page=${perPage}`];
  if (f.status !== undefined) parts.push(`status=${f.status}`);
  if (f.priority !== undefined) parts.push(`priority=${f.priority}`);
  if (f.assignee_id !== undefined) parts.push(`assignee_id=${f.assignee_id}`);
  if (f.requester_email !== undefined) parts.push(`requester_email=${encodeURIComponent(f.requester_email)}`);
  for (const [k, v] of f.custom_fields ?? []) parts.push(`custom_fields[${k}]=${encodeURIComponent(v)}`);
  if (f.search !== undefined) parts.push(`search=${encodeURIComponent(f.search)}`);
  return parts.join('&');
}

/** The filter as checkFilter sends it: one value per custom field (a repeated custom_fields key is a 422), the last. */
export function sentFilter(f: Filter): Filter {
  return f.custom_fields ? { ...f, custom_fields: [...new Map(f.custom_fields).entries()] } : f;
}

/** Newest first: created_at descending, reference descending on ties (decisions.md, "Ticket list"). */
export function sortNewest(ts: Shown[]): Shown[] {
  return [...ts].sort(
    (a, b) => b.created_at.localeCompare(a.created_at) || b.reference.localeCompare(a.reference),
  );
}

export async function fetchAll(gateway: Gateway, key: string, uuids: string[]): Promise<Shown[]> {
  const out: Shown[] = [];
  for (let i = 0; i < uuids.length; i += 20) {
    const got = await Promise.all(
      uuids.slice(i, i + 20).map(async (u) => {
        const r = await gateway.call('GET', `/api/tickets/${u}`, { key });
        expect(r.status, r.text).toBe(200);
        return r.body.data as Shown;
      }),
    );
    out.push(...got);
  }
  return out;
}

export interface Mismatch {
  query: string;
  expectedTotal: number;
  total: number;
  expected: string[];
  got: string[];
  status: number;
}

/**
 * Compares one filter's pages (page 1, a middle one, the last and one past it) with the model. A page answered 503
 * (the store too slow for the request's deadline: a loaded machine) is asked again, as the contract's client does
 * (withRetries): a 503 says nothing of the index, and only one that persists is reported.
 */
export async function checkFilter(
  gateway: Gateway,
  key: string,
  model: Shown[],
  f: Filter,
  perPage: number,
  allPages = false,
): Promise<Mismatch[]> {
  f = sentFilter(f);
  const expected = sortNewest(model.filter((t) => matches(t, f))).map((t) => t.uuid);
  const last = Math.max(1, Math.ceil(expected.length / perPage));
  const pages = allPages
    ? Array.from({ length: last + 1 }, (_, i) => i + 1)
    : [...new Set([1, Math.ceil(last / 2), last, last + 1])];
  const out: Mismatch[] = [];
  for (const page of pages) {
    const query = queryOf(f, page, perPage);
    const r = await withRetries(() => gateway.call('GET', `/api/tickets?${query}`, { key }));
    const want = expected.slice((page - 1) * perPage, page * perPage);
    const got = r.status === 200 ? (r.body.data as Shown[]).map((t) => t.uuid) : [];
    const total = r.status === 200 ? r.body.meta.total : -1;
    if (r.status !== 200 || total !== expected.length || JSON.stringify(got) !== JSON.stringify(want)) {
      out.push({ query, expectedTotal: expected.length, total, expected: want, got, status: r.status });
    }
  }
  return out;
}
