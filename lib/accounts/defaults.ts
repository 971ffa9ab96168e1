import type { Stage } from './types.ts';

/** The categories every account has (the specification's default slugs). */
export const DEFAULT_CATEGORIES: readonly { slug: string; name: string }[] = [
  { slug: 'bug', name: 'Bug' },
  { slug: 'question', name: 'Question' },
  { slug: 'feature', name: 'Feature' },
  { slug: 'billing', name: 'Billing' },
  { slug: 'other', name: 'Other' },
  { slug: 'onboarding', name: 'Onboarding' },
  { slug: 'offboarding', name: 'Offboarding' },
  { slug: 'call', name: 'Call' },
  { slug: 'email', name: 'Email' },
  { slug: 'meeting', name: 'Meeting' },
  { slug: 'reminder', name: 'Reminder' },
];

/** The pipeline a new account gets when its file declares none. */
export const DEFAULT_PIPELINE: { name: string; stages: Omit<Stage, 'id' | 'position'>[] } = {
  name: 'Sales',
  stages: [
    { name: 'Lead', color: '#3B82F6', probability: 10 },
    { name: 'Qualified', color: '#6366F1', probability: 25 },
    { name: 'Proposal', color: '#F59E0B', probability: 50 },
    { name: 'Negotiation', color: '#F97316', probability: 75 },
    { name: 'Won', color: '#22C55E', probability: 100 },
    { name: 'Lost', color: '#EF4444', probability: 0 },
  ],
};

export const DEFAULT_TICKET_PREFIX = 'TKT';
