import { randomBytes } from 'node:crypto';

/** Webhook endpoint ids: minted, and recognised (by the domain and the OpenAPI document) in one place. */

/**
 * A new endpoint's id: `we_`, its creation time (epoch ms, 12 hex digits) and 12 random hex digits. The partition
 * sorts by id, so it reads oldest first; the random part keeps ids unguessable and distinct within a millisecond.
 */
export function newEndpointId(nowMs: number): string {
  return `we_${nowMs.toString(16).padStart(12, '0')}${randomBytes(6).toString('hex')}`;
}

/** What an endpoint id looks like (newEndpointId): the one spelling, for the domain and the OpenAPI document. */
export const ENDPOINT_ID_PATTERN = /^we_[0-9a-f]{24}$/;
export const isEndpointId = (id: string): boolean => ENDPOINT_ID_PATTERN.test(id);
