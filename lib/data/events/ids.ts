import { randomBytes } from 'node:crypto';

/** Event ids (the feed's design: ../events.ts): minted, recognised, and read back to their place. */

// `evt_` + the place (base 36, 10 digits: lexical order is sequence order) + 10 hex digits drawn at random,
// so an id of another account (or a made-up one) names no event here even where the place exists.
export const eventId = (seq: number) =>
  `evt_${seq.toString(36).padStart(10, '0')}${randomBytes(5).toString('hex')}`;

/** What an event id looks like (eventId): the one spelling, for the domain's checks and the OpenAPI document. */
export const EVENT_ID_PATTERN = /^evt_[0-9a-z]{10}[0-9a-f]{10}$/;
export const isEventId = (id: string): boolean => EVENT_ID_PATTERN.test(id);

/** The place an event id names, or undefined when it is not an event id at all. */
export function placeOfEventId(id: string): number | undefined {
  return isEventId(id) ? Number.parseInt(id.slice('evt_'.length, 'evt_'.length + 10), 36) : undefined;
}
