import type { Timestamp } from '#lib/time.ts';
import type { Grant } from './scopes.ts';

export const PLANS = ['startup', 'pro', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

/** Requests per account and minute by plan (decisions.md, "Rate limits per plan"); startup has no API. */
export const PLAN_RATE_LIMITS: Record<Plan, number> = { startup: 0, pro: 400, enterprise: 1000 };

export function rateLimitOf(account: Pick<Account, 'plan' | 'rateLimitPerMinute'>): number {
  return account.rateLimitPerMinute ?? PLAN_RATE_LIMITS[account.plan];
}

export const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
export type Priority = (typeof PRIORITIES)[number];

export const ASSIGNMENT_METHODS = ['round_robin', 'least_busy', 'random'] as const;
export type AssignmentMethod = (typeof ASSIGNMENT_METHODS)[number];

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** Opening intervals per weekday as ["HH:MM", "HH:MM"] pairs, in the calendar's time zone. */
export interface BusinessHours {
  timeZone: string;
  weekly: Partial<Record<Weekday, [string, string][]>>;
  holidays: string[];
}

export interface SlaPolicy {
  name: string;
  priority: Priority | null;
  category: string | null;
  /** Targets in minutes (decisions.md, "Reply-based service levels"): one to three of them, null when not set. */
  firstReplyMinutes: number | null;
  nextReplyMinutes: number | null;
  /** The resolution target: the ticket's `due_at` (the one target of account files before issue 28). */
  resolutionMinutes: number | null;
  /** All three targets count opening hours only (the account's calendar). */
  businessHours: boolean;
}

export interface Account {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  /** A suspended account keeps its data but its keys get 403, like a plan without API access. */
  suspended?: boolean;
  /** Requests per minute in place of the plan's (account file `rate_limit_per_minute`); null: the plan's. */
  rateLimitPerMinute?: number | null;
  ticketPrefix: string;
  defaultPriority: Priority;
  autoAssignment: { enabled: boolean; method: AssignmentMethod };
  businessHours: BusinessHours | null;
  slaPolicies: SlaPolicy[];
  /**
   * The e-mail channel (decisions.md, "The e-mail channel"): the addresses mail for the account arrives at,
   * lower-cased (the first is the one replies go from), and whether a new ticket by mail is acknowledged.
   */
  email?: { addresses: string[]; acknowledge: boolean };
  createdAt: Timestamp;
  updatedAt: Timestamp;
}

/**
 * People (decisions.md, "People: agents, teams and organizations"). The times, and an agent's status and capacity,
 * are absent on items an account file wrote before people were resources (lib/people/present.ts reads them so).
 */
export interface Team {
  id: number;
  name: string;
  createdAt?: Timestamp;
  updatedAt?: Timestamp;
  /** Made by an import (issue 42): the source, its id there and the import's id. Absent: made otherwise. */
  importedFrom?: ImportedFrom;
}

/** Where an imported object came from (the API's `imported_from`: lib/imports/imported-from.ts). */
export interface ImportedFrom {
  source: string;
  id: string;
  importId: string;
}

export const AGENT_STATUSES = ['available', 'away', 'offline'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

export interface Agent {
  id: number;
  email: string;
  name: string;
  active: boolean;
  /** The one record of membership: a team's agents are the agents naming it here. */
  teamIds: number[];
  /** Absent: available. */
  status?: AgentStatus;
  /** When an away or offline status ends (the agent then reads as available); null: until changed. */
  statusUntil?: Timestamp | null;
  /** The most open tickets automatic assignment gives the agent (1..10,000); null or absent: no limit. */
  capacity?: number | null;
  createdAt?: Timestamp;
  updatedAt?: Timestamp;
  /** Made by an import (issue 42). Absent: made otherwise (an agent matched by e-mail included). */
  importedFrom?: ImportedFrom;
}

export interface Category {
  id: number;
  slug: string;
  name: string;
  defaultTeamId: number | null;
}

export interface Stage {
  id: number;
  name: string;
  color: string;
  probability: number;
  position: number;
}

export interface Pipeline {
  id: number;
  name: string;
  isDefault: boolean;
  active: boolean;
  stages: Stage[];
}

export interface Contact {
  id: number;
  uuid: string;
  email: string;
  firstName: string;
  lastName: string | null;
  phone: string | null;
  createdAt: Timestamp;
  /** Changed by every write that changes the contact (contacts from before it existed: their createdAt). */
  updatedAt?: Timestamp;
  /**
   * Its organization, set when it is made from its address's domain (decisions.md), shown as it is now
   * (lib/organizations/refs.ts). Absent: none.
   */
  organization?: { id: number; name: string } | null;
  /** Made by an import (issue 42). Absent: made otherwise. */
  importedFrom?: ImportedFrom;
}

/** Everything an account is configured with; small, read in one query and cacheable. */
export interface AccountConfig {
  account: Account;
  teams: Team[];
  agents: Agent[];
  categories: Category[];
  pipelines: Pipeline[];
  /**
   * The versions of its agents and teams as read from the store (their ETags), by `agent#<id>` and `team#<id>`;
   * absent in a configuration not read from the store (an account file's merge).
   */
  versions?: Record<string, number>;
}

/** How AccountConfig.versions names an agent's or a team's version. */
export const versionKey = (type: 'agent' | 'team', id: number) => `${type}#${id}`;

/** Integer id sequences kept per account. */
export const SEQUENCES = [
  'team',
  'agent',
  'category',
  'pipeline',
  'stage',
  'contact',
  'deal',
  'organization',
] as const;
export type Sequence = (typeof SEQUENCES)[number];

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  /** The key's keyed hash (lib/accounts/key-hash.ts); SHA-256 for a key made before scopes. */
  hash: string;
  prefix: string;
  /** Null for a key made before names. */
  name: string | null;
  /** What the key may do (lib/accounts/scopes.ts); `*` for a key made before scopes. */
  scopes: Grant[];
  createdAt: Timestamp;
  expiresAt: Timestamp | null;
  lastUsedAt: Timestamp | null;
  revokedAt: Timestamp | null;
  /** The id of the key a rotation made of this one (a key rotates once); absent: never rotated. */
  rotatedTo?: string;
}
