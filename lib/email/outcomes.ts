import { randomBytes } from 'node:crypto';
import { nowMillis } from '#lib/time.ts';

/** What became of a received mail (decisions.md, "The e-mail channel"): the inbound log's `outcome`. */
export const INBOUND_OUTCOMES = [
  'threaded',
  'new_ticket',
  'follow_up',
  'duplicate',
  'automatic',
  'bounce',
  'rejected',
  'suspended',
] as const;
export type InboundOutcome = (typeof INBOUND_OUTCOMES)[number];

/** `in_` + milliseconds (13 digits) + 12 random hex: ids sort by the time the mail was received. */
export const newInboundId = (ms = nowMillis()) =>
  `in_${String(ms).padStart(13, '0')}${randomBytes(6).toString('hex')}`;
export const INBOUND_ID_PATTERN = /^in_\d{13}[0-9a-f]{12}$/;
