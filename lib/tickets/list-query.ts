import { PRIORITIES } from '#lib/accounts/types.ts';
import { type FieldErrors, ValidationFailed } from '#lib/errors.ts';
import { attribute, MAX_EXACT_INTEGER } from '#lib/validation.ts';
import { CUSTOM_FIELD_KEY } from './schemas.ts';
import { TICKET_STATUSES, type TicketFilter } from './types.ts';

/** The list's query parameters, validated (decisions.md, "Ticket list"). */
export interface ListQuery extends TicketFilter {
  page: number;
  perPage: number;
  search?: string;
  /** The recognised parameters as sent, in order, for the pagination links. */
  linkParams: [string, string][];
}

export const DEFAULT_PER_PAGE = 15;
export const MAX_PER_PAGE = 100;
const SCALARS = [
  'page',
  'per_page',
  'status',
  'priority',
  'assignee_id',
  'requester_email',
  'search',
] as const;
const CUSTOM_FIELD_PARAM = /^custom_fields\[(.*)\]$/;

export function parseListQuery(query: Record<string, string[]>): ListQuery {
  const errors: FieldErrors = {};
  const fail = (field: string, message: string) => {
    errors[field] = [...(errors[field] ?? []), message];
  };
  const single = (field: string): string | undefined => {
    const values = query[field];
    if (!values) return undefined;
    if (values.length > 1) {
      fail(field, `The ${attribute(field)} field must be a single value.`);
      return undefined;
    }
    const value = (values[0] ?? '').trim();
    return value === '' ? undefined : value;
  };
  const integer = (field: string, min: number, max?: number): number | undefined => {
    const raw = single(field);
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw)) return void fail(field, `The ${attribute(field)} field must be an integer.`);
    const value = Number(raw);
    if (value > MAX_EXACT_INTEGER) {
      return void fail(field, `The ${attribute(field)} field must not be greater than ${MAX_EXACT_INTEGER}.`);
    }
    if (max !== undefined && (value < min || value > max)) {
      return void fail(field, `The ${attribute(field)} field must be between ${min} and ${max}.`);
    }
    if (value < min) return void fail(field, `The ${attribute(field)} field must be at least ${min}.`);
    return value;
  };
  const picked = <T extends string>(field: string, allowed: readonly T[]): T | undefined => {
    const raw = single(field);
    if (raw === undefined) return undefined;
    if (!(allowed as readonly string[]).includes(raw))
      return void fail(field, `The selected ${attribute(field)} is invalid.`);
    return raw as T;
  };

  const page = integer('page', 1) ?? 1;
  const perPage = integer('per_page', 1, MAX_PER_PAGE) ?? DEFAULT_PER_PAGE;
  const status = picked('status', TICKET_STATUSES);
  const priority = picked('priority', PRIORITIES);
  const assigneeId = integer('assignee_id', 1);
  const requesterEmail = single('requester_email');
  if (requesterEmail !== undefined && requesterEmail.length > 254) {
    fail('requester_email', 'The requester email field must not be greater than 254 characters.');
  }
  const search = single('search');
  if (search !== undefined && search.length > 255)
    fail('search', 'The search field must not be greater than 255 characters.');

  const customFields: [string, string][] = [];
  for (const [param, values] of Object.entries(query)) {
    const key = CUSTOM_FIELD_PARAM.exec(param)?.[1];
    if (key === undefined) {
      if (param === 'custom_fields')
        fail('custom_fields', 'The custom fields filter must be sent as custom_fields[<key>]=<value>.');
      continue;
    }
    const field = `custom_fields.${key}`;
    if (!CUSTOM_FIELD_KEY.test(key))
      fail(field, `The custom fields.${key} key must be 1 to 64 letters, digits or underscores.`);
    else if (values.length > 1) fail(field, `The custom fields.${key} field must be a single value.`);
    else customFields.push([key, values[0] ?? '']);
  }
  if (Object.keys(errors).length > 0) throw new ValidationFailed(errors);

  const linkParams: [string, string][] = [];
  for (const [param, values] of Object.entries(query)) {
    const known = (SCALARS as readonly string[]).includes(param) || CUSTOM_FIELD_PARAM.test(param);
    if (known && param !== 'page') linkParams.push([param, values[0] ?? '']);
  }
  return {
    page,
    perPage,
    ...(status ? { status } : {}),
    ...(priority ? { priority } : {}),
    ...(assigneeId !== undefined ? { assigneeId } : {}),
    ...(requesterEmail !== undefined ? { requesterEmail } : {}),
    ...(search !== undefined ? { search } : {}),
    customFields,
    linkParams,
  };
}
