import { isDeepStrictEqual } from 'node:util';
import type { EventDraft } from '#lib/data/events.ts';

/** The resources that have events, and what happens to them (decisions.md, "Events"). */
export const EVENT_RESOURCES = ['ticket', 'deal', 'contact'] as const;
export type EventResource = (typeof EVENT_RESOURCES)[number];
export const EVENT_TYPES = EVENT_RESOURCES.flatMap((r) => [`${r}.created`, `${r}.updated`]);

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
