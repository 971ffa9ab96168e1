import { ReadBudgetExceeded } from '#lib/data/store/errors.ts';
import { ValidationFailed } from '#lib/errors.ts';

/** A page as asked: its number, its size, and the parameters its links repeat. */
export interface PageRequest {
  page: number;
  perPage: number;
  /** The recognised parameters as sent, in order, for the pagination links (lib/list-params.ts). */
  linkParams: [string, string][];
}

/** Where a list lives: the API's base URL and the route's path (the handler's request.resourcePath). */
export interface ListUrl {
  baseUrl: string;
  path: string;
}

/** Laravel's paginator shape: data, links (first/last/prev/next), meta. */
export function paginate<T>(data: T[], total: number, q: PageRequest, at: ListUrl) {
  const path = `${at.baseUrl}${at.path}`;
  const lastPage = Math.max(1, Math.ceil(total / q.perPage));
  const extra = q.linkParams.map(([k, v]) => `&${encodeKey(k)}=${encodeURIComponent(v)}`).join('');
  const url = (page: number) => `${path}?page=${page}${extra}`;
  const from = data.length > 0 ? (q.page - 1) * q.perPage + 1 : null;
  return {
    data,
    links: {
      first: url(1),
      last: url(lastPage),
      prev: q.page > 1 ? url(q.page - 1) : null,
      next: q.page < lastPage ? url(q.page + 1) : null,
    },
    meta: {
      current_page: q.page,
      from,
      last_page: lastPage,
      path,
      per_page: q.perPage,
      to: from === null ? null : from + data.length - 1,
      total,
    },
  };
}

/** Query keys keep their brackets readable: custom_fields[plan]. */
function encodeKey(key: string): string {
  return encodeURIComponent(key).replaceAll('%5B', '[').replaceAll('%5D', ']');
}

/**
 * A list's read, or the 422 that says how to narrow it when the read would pass the list's read budget
 * (docs/decisions.md, "Bounded work per list"): a search word that matches too much, a page too deep, or
 * several filters each matching too much to be intersected within the budget.
 */
export async function withinReadBudget<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof ReadBudgetExceeded) {
      throw ValidationFailed.field(error.parameter, NARROW[error.parameter]);
    }
    throw error;
  }
}

const NARROW: Record<ReadBudgetExceeded['parameter'], string> = {
  search: 'The search matches too many entries to list: search for a longer or less common word.',
  page: 'The page is too deep to list: ask for an earlier page, or narrow the list with a filter or a search.',
  filters:
    'The filters together match too many entries to list: add a filter that matches fewer entries, or a search.',
};
