import type { Timestamp } from '#lib/time.ts';

export const DEAL_STATUSES = ['open', 'won', 'lost'] as const;
export type DealStatus = (typeof DEAL_STATUSES)[number];

export interface Deal {
  uuid: string;
  /** Per-account number, in creation order: with created_at, the deal's place in every list. */
  number: number;
  name: string;
  /** An exact decimal (at most 4 digits after the point): sums of amounts are kept exact (lib/decimal.ts). */
  amount: number;
  currency: string;
  status: DealStatus;
  /** The stage's while open, 100 when won, 0 when lost. */
  probability: number;
  pipeline: { id: number; name: string };
  stage: { id: number; name: string; color: string };
  /** The contact as it was at the deal's last write; answers show the contact as it is now. */
  contact: { id: number; uuid: string; fullName: string; email: string; erased?: boolean };
  expectedCloseDate: string | null;
  contactPhone: string | null;
  lostReason: string | null;
  wonAt: Timestamp | null;
  lostAt: Timestamp | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
}

/** The deal list's filters (decisions.md, "Deals that move"), combined with AND. */
export interface DealFilter {
  pipelineId?: number;
  stageId?: number;
  status?: DealStatus;
  currency?: string;
  /** The contact `contact_email` names (resolved before the list is read). */
  contactId?: number;
}
