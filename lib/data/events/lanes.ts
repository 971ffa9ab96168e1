import { uuidParts } from '../index/order-key.ts';
import { EVENT_PLACE_BASE, EVENT_SHARDS } from '../keys/events.ts';

/**
 * The feed's lanes (the feed's design: ../events.ts; docs/data-model.md, "Events"). A lane is a run of places with
 * one counter: shard k (0..15) hands out EVENT_PLACE_BASE + n * 16 + k, n = 0, 1, … from its counter item
 * `EVENT_SEQ#<acc>#<k>`. Every object's events go to one shard (its creation time's), so they take rising places.
 * A reader that must pass a place no writer was handed yet moves the lane's counter past it (a bump: one
 * conditional UpdateItem that records on the counter the places it skips) and then voids them for good with one
 * range item (./bump.ts); the counter's takes are ./counter.ts.
 */

export const laneOf = (seq: number) => (seq - EVENT_PLACE_BASE) % EVENT_SHARDS;
/** A place's number in its lane: the shard counter's n. */
export const nthOf = (seq: number) => Math.floor((seq - EVENT_PLACE_BASE) / EVENT_SHARDS);
export const placeOf = (lane: number, nth: number) => EVENT_PLACE_BASE + nth * EVENT_SHARDS + lane;
/** The lane's first place at or after `seq`. */
export function laneAtOrAfter(lane: number, seq: number): number {
  const first = EVENT_PLACE_BASE + lane;
  return seq <= first ? first : first + Math.ceil((seq - first) / EVENT_SHARDS) * EVENT_SHARDS;
}
/** Every lane: the shards. */
export const LANES = Array.from({ length: EVENT_SHARDS }, (_, k) => k);

/** FNV-1a of a string: a shard spread evenly whatever the string's shape. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** The shard of an object created at `createdUs` (its uuid carries that time: eventShardOfObject agrees). */
export const eventShardOfCreation = (createdUs: number) => hash(String(createdUs)) % EVENT_SHARDS;

/**
 * The shard every event of an object goes to: its creation time's (an ordered uuid carries it, so a create knows
 * its shard before its uuid exists), else its uuid's; an object known by an integer id alone (an agent, a team, an organization)
 * by its resource and id, given the event's `type`, so all its events take rising places in one lane; else (tests'
 * drafts) its text's. A message goes with its ticket (`ticket_uuid`): a conversation's events share one shard, so
 * the feed keeps the conversation's order, and a message's event stays in commit order with its ticket's.
 */
export function eventShardOfObject(object: unknown, type?: string): number {
  const field = (name: string) =>
    typeof object === 'object' && object !== null && name in object
      ? String((object as Record<string, unknown>)[name])
      : undefined;
  const uuid = field('uuid') ?? field('ticket_uuid');
  const id = field('id');
  if (uuid === undefined && type !== undefined && id !== undefined) {
    return hash(`${type.slice(0, type.indexOf('.'))}#${id}`) % EVENT_SHARDS;
  }
  if (uuid === undefined) return hash(JSON.stringify(object) ?? '') % EVENT_SHARDS;
  const parts = uuidParts(uuid);
  return parts ? eventShardOfCreation(parts.createdMicros) : hash(uuid) % EVENT_SHARDS;
}
