import { matchesEventType } from '#lib/events/types.ts';
import type { Endpoint } from './types.ts';

/**
 * Whether an endpoint subscribes to an event type: its `events` hold the type, `<resource>.*` or `*` (as GET
 * the `listEvents` route's `type` reads them). The fan-out and a redelivery `{since}` ask it.
 */
export function subscribes(endpoint: Pick<Endpoint, 'events'>): (type: string) => boolean {
  return (type) => matchesEventType(endpoint.events, type);
}
