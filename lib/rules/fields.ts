import { PRIORITIES } from '#lib/accounts/types.ts';
import { CUSTOM_FIELD_KEY } from '#lib/tickets/schemas.ts';
import { CHANNELS, TICKET_STATUSES, type Ticket } from '#lib/tickets/types.ts';
import { CHANGE_OPS, type ConditionOp, type RuleKind, type Scalar, VIAS, type Via } from './types.ts';

/**
 * The fields rules read and write (decisions.md, "Business rules"), as data: the schemas check a rule against
 * this catalogue and the evaluator reads a ticket through it, so the two cannot disagree on what a field is.
 */

/** How a field's values compare: one of a list, an account's entity, free text, a ticket's tags, a custom field. */
export type FieldKind = 'choice' | 'reference' | 'text' | 'tags' | 'custom';
export type Reference = 'team' | 'agent' | 'category' | 'organization';

export interface FieldSpec {
  kind: FieldKind;
  choices?: readonly string[];
  reference?: Reference;
  /** Only rules of this kind read it (the message's fields). */
  only?: RuleKind;
}

const CONDITION_FIELDS: Record<string, FieldSpec> = {
  status: { kind: 'choice', choices: TICKET_STATUSES },
  priority: { kind: 'choice', choices: PRIORITIES },
  channel: { kind: 'choice', choices: CHANNELS },
  via: { kind: 'choice', choices: VIAS },
  category: { kind: 'reference', reference: 'category' },
  team_id: { kind: 'reference', reference: 'team' },
  assignee_id: { kind: 'reference', reference: 'agent' },
  organization_id: { kind: 'reference', reference: 'organization' },
  tags: { kind: 'tags' },
  subject: { kind: 'text' },
  description: { kind: 'text' },
  requester_email: { kind: 'text' },
  'message.author': { kind: 'choice', choices: ['agent', 'requester'], only: 'message' },
  'message.visibility': { kind: 'choice', choices: ['public', 'internal'], only: 'message' },
  'message.body': { kind: 'text', only: 'message' },
};

/** The fields a `set` action writes. */
export const SETTABLE_FIELDS = [
  'status',
  'priority',
  'team_id',
  'assignee_id',
  'category',
  'organization_id',
] as const;

const CUSTOM_PREFIX = 'custom_fields.';

/** A custom field's key, when `field` names one (`custom_fields.plan`: `plan`). */
export function customKey(field: string): string | undefined {
  if (!field.startsWith(CUSTOM_PREFIX)) return undefined;
  const key = field.slice(CUSTOM_PREFIX.length);
  return CUSTOM_FIELD_KEY.test(key) ? key : undefined;
}

/** What a condition may name, or undefined: an unknown field. */
export function conditionField(field: string): FieldSpec | undefined {
  if (Object.hasOwn(CONDITION_FIELDS, field)) return CONDITION_FIELDS[field];
  return customKey(field) === undefined ? undefined : { kind: 'custom' };
}

/** What a `set` action may name, or undefined. */
export function settableField(field: string): FieldSpec | undefined {
  if ((SETTABLE_FIELDS as readonly string[]).includes(field)) return conditionField(field);
  return customKey(field) === undefined ? undefined : { kind: 'custom' };
}

const OPS_BY_KIND: Record<FieldKind, readonly ConditionOp[]> = {
  choice: ['is', 'is_not', 'in', 'not_in', 'present', 'absent', ...CHANGE_OPS],
  reference: ['is', 'is_not', 'in', 'not_in', 'present', 'absent', ...CHANGE_OPS],
  text: ['is', 'is_not', 'in', 'not_in', 'contains', 'not_contains', 'present', 'absent', ...CHANGE_OPS],
  custom: ['is', 'is_not', 'in', 'not_in', 'contains', 'not_contains', 'present', 'absent', ...CHANGE_OPS],
  tags: ['contains', 'not_contains', 'in', 'not_in', 'present', 'absent', ...CHANGE_OPS],
};

export const opsOf = (spec: FieldSpec): readonly ConditionOp[] => OPS_BY_KIND[spec.kind];

/** What the change is, beside the ticket: how it came, and its message (message rules). */
export interface ChangeFacts {
  via: Via;
  message?: { author: 'agent' | 'requester' | 'system'; visibility: 'public' | 'internal'; body: string };
}

/**
 * What conditions read of a ticket: a stored ticket, or a ticket as an event shows it (a backtest reads the
 * feed: lib/rules/backtest.ts). Only these fields: a condition can read nothing else.
 */
export type RuleSubject = Pick<
  Ticket,
  'status' | 'priority' | 'channel' | 'tags' | 'subject' | 'description' | 'customFields'
> & {
  category: { slug: string } | null;
  team: { id: number } | null;
  assignee: { id: number } | null;
  organization?: { id: number } | null;
  requester: { email: string; erased?: boolean };
};

/** A field's value on a ticket: a scalar (null: none), or the tags. */
export type FieldValue = Scalar | string[];

/** A field's value as conditions read it (the field known to conditionField). */
export function readField(ticket: RuleSubject, field: string, facts: ChangeFacts): FieldValue {
  switch (field) {
    case 'status':
      return ticket.status;
    case 'priority':
      return ticket.priority;
    case 'channel':
      return ticket.channel;
    case 'via':
      return facts.via;
    case 'category':
      return ticket.category?.slug ?? null;
    case 'team_id':
      return ticket.team?.id ?? null;
    case 'assignee_id':
      return ticket.assignee?.id ?? null;
    case 'organization_id':
      return ticket.organization?.id ?? null;
    case 'tags':
      return ticket.tags;
    case 'subject':
      return ticket.subject;
    case 'description':
      return ticket.description;
    case 'requester_email':
      return ticket.requester.erased ? null : ticket.requester.email;
    case 'message.author':
      return facts.message?.author ?? null;
    case 'message.visibility':
      return facts.message?.visibility ?? null;
    case 'message.body':
      return facts.message?.body ?? null;
    default: {
      const key = customKey(field);
      return key === undefined ? null : (ticket.customFields[key] ?? null);
    }
  }
}
