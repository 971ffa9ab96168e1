import type { ImportedFrom } from '#lib/accounts/types.ts';
import type { Timestamp } from '#lib/time.ts';

/**
 * An organization (decisions.md, "People: agents, teams and organizations"): a customer's company, known by its
 * domains. Its name and each of its domains belong to it alone in its account.
 */
export interface Organization {
  /** From the account's `organization` sequence: never reused, a deleted one's included. */
  id: number;
  name: string;
  /** Each lower-case and ASCII (an internationalized domain in its ASCII form), in the order given. */
  domains: string[];
  externalId: string | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  /** Made by an import (issue 42). Absent: made otherwise. */
  importedFrom?: ImportedFrom;
}

/**
 * Domains an organization may have: its create, update and delete each write one claim a domain in one
 * transaction (an update at most 2 × 20 + 6 of DynamoDB's 100 actions: docs/capacity.md, "Organizations").
 */
export const MAX_DOMAINS = 20;
export const MAX_NAME_LENGTH = 255;
export const MAX_EXTERNAL_ID_LENGTH = 255;

/** A name as names are compared for uniqueness: case-insensitively, in one Unicode form (NFC). */
export const comparedName = (name: string) => name.normalize('NFC').toLowerCase();

/** An organization as a ticket or contact names it: its id, and its name (shown as it is now: ./refs.ts). */
export interface OrganizationRef {
  id: number;
  name: string;
}
