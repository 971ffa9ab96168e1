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
