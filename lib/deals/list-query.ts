import * as v from 'valibot';
import {
  DEFAULT_PER_PAGE,
  linkParamsOf,
  maxText,
  pageParams,
  param,
  picked,
  recognisedBy,
  wholeNumber,
  wholeNumberWire,
} from '#lib/list-params.ts';
import type { PageRequest } from '#lib/pagination.ts';
import { parseInput } from '#lib/validation.ts';
import { DEAL_STATUSES, type DealStatus } from './types.ts';

/** The `listDeals` route's query (decisions.md, "Deals that move"): the ticket list's rules, the deals' filters. */
export const DealListQueryParams = v.object({
  ...pageParams,
  pipeline_id: param('pipeline_id', wholeNumber('pipeline_id', 1), wholeNumberWire(1)),
  stage_id: param('stage_id', wholeNumber('stage_id', 1), wholeNumberWire(1)),
  status: param('status', picked('status', DEAL_STATUSES)),
  currency: param(
    'currency',
    v.pipe(
      v.string(),
      v.toUpperCase(),
      v.regex(/^[A-Z]{3}$/, 'The currency field must be a three-letter ISO 4217 code.'),
    ),
    v.pipe(v.string(), v.length(3), v.regex(/^[A-Za-z]{3}$/)),
  ),
  contact_email: param('contact_email', maxText('contact_email', 254)),
  search: param('search', maxText('search', 255)),
});

export interface DealListQuery extends PageRequest {
  pipelineId?: number;
  stageId?: number;
  status?: DealStatus;
  currency?: string;
  contactEmail?: string;
  search?: string;
}

export function parseDealListQuery(query: Record<string, string[]>): DealListQuery {
  const q = parseInput(DealListQueryParams, query);
  return {
    page: q.page ?? 1,
    perPage: q.per_page ?? DEFAULT_PER_PAGE,
    ...(q.pipeline_id !== undefined ? { pipelineId: q.pipeline_id } : {}),
    ...(q.stage_id !== undefined ? { stageId: q.stage_id } : {}),
    ...(q.status ? { status: q.status } : {}),
    ...(q.currency ? { currency: q.currency } : {}),
    ...(q.contact_email !== undefined ? { contactEmail: q.contact_email } : {}),
    ...(q.search !== undefined ? { search: q.search } : {}),
    linkParams: linkParamsOf(query, recognisedBy(DealListQueryParams)),
  };
}
