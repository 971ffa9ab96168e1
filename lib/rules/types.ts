import type { Timestamp } from '#lib/time.ts';

/**
 * Business rules and macros (decisions.md, "Business rules: triggers, time rules and macros"; docs/rules.md): the
 * shapes the pure core works on. A rule as the domain holds it, in the house's camelCase; a condition's `field` and
 * an action's `field` keep the API's names (`team_id`, `custom_fields.plan`), since they are values a client wrote.
 */

export const RULE_KINDS = ['created', 'updated', 'message', 'time'] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

export const CONDITION_OPS = [
  'is',
  'is_not',
  'in',
  'not_in',
  'contains',
  'not_contains',
  'present',
  'absent',
  'changed',
  'changed_from',
  'changed_to',
] as const;
export type ConditionOp = (typeof CONDITION_OPS)[number];

/** Ops that compare the field before and after the change: `updated` rules only. */
export const CHANGE_OPS: readonly ConditionOp[] = ['changed', 'changed_from', 'changed_to'];
/** Ops that take no value. */
export const VALUELESS_OPS: readonly ConditionOp[] = ['present', 'absent', 'changed'];

/** How a change was made (the `via` condition field). */
export const VIAS = ['api', 'email', 'rule', 'macro'] as const;
export type Via = (typeof VIAS)[number];

export const TIME_SINCE = [
  'created_at',
  'updated_at',
  'waiting_since',
  'status_changed_at',
  'last_message_at',
] as const;
export type TimeSince = (typeof TIME_SINCE)[number];

export const ACTION_TYPES = ['set', 'add_tags', 'remove_tags', 'note', 'reply'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

/** A value a condition compares with, or an action sets (`"auto"`: the account's assignment). */
export type Scalar = string | number | boolean | null;

export interface Condition {
  field: string;
  op: ConditionOp;
  /** A list for `in` and `not_in`; absent for `present`, `absent` and `changed`. */
  value?: Scalar | Scalar[];
}

export interface Conditions {
  all: Condition[];
  any: Condition[];
}

export type Action =
  | { type: 'set'; field: string; value: Scalar }
  | { type: 'add_tags' | 'remove_tags'; tags: string[] }
  | { type: 'note' | 'reply'; body: string; agentId: number | null };

export interface TimeSettings {
  afterMinutes: number;
  since: TimeSince;
  businessHours: boolean;
}

export interface Rule {
  id: number;
  name: string;
  active: boolean;
  position: number;
  on: RuleKind;
  conditions: Conditions;
  actions: Action[];
  /** Only and always with `on: time`. */
  time: TimeSettings | null;
  version: number;
  createdAt: Timestamp;
  updatedAt: Timestamp;
}

export interface Macro {
  id: number;
  name: string;
  actions: Action[];
  createdAt: Timestamp;
  updatedAt: Timestamp;
}

/** Exact counts of a rule's firings in the last hour, day and week (lib/data/rules/firings.ts counts them). */
export interface FiredCounts {
  last_hour: number;
  last_day: number;
  last_week: number;
}

/** The contract's published limits. */
export const RULE_LIMITS = {
  /** Conditions a rule, `all` and `any` together. */
  conditions: 50,
  actions: 20,
  activeRules: 1000,
  /** Rules that fire in one change: the fixed point's cap. */
  firedPerChange: 10,
  /** Rule replies a ticket in any hour. */
  repliesPerHour: 3,
  /** The longest a time rule waits: a year of minutes. */
  afterMinutes: 525_600,
} as const;

/** Rules first by `position`, ties by `id` (the contract's order). */
export function byPosition(a: Pick<Rule, 'position' | 'id'>, b: Pick<Rule, 'position' | 'id'>): number {
  return a.position - b.position || a.id - b.id;
}
