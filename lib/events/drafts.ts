import { isDeepStrictEqual } from 'node:util';
import type { EventDraft } from '#lib/data/events.ts';
import type { EventResource } from './types.ts';

type Shown = Record<string, unknown>;

/** A `*.created` event: the resource as its GET answers it, at version 1. */
export function createdEvent(resource: EventResource, object: Shown): EventDraft {
  return { type: `${resource}.created`, object, version: 1 };
}

/**
 * A `*.updated` event: the resource as its GET answers it after the change, and `previous`, the value before
 * the change of each top-level field that changed (a nested object changed anywhere is given whole).
 */
export function updatedEvent(
  resource: EventResource,
  before: Shown,
  after: Shown,
  version: number,
): EventDraft {
  const previous: Shown = {};
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (!isDeepStrictEqual(before[field], after[field])) previous[field] = before[field] ?? null;
  }
  return { type: `${resource}.updated`, object: after, previous, version };
}
