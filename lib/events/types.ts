/** The event types (decisions.md, "Events"), and the one reading of a type pattern (the feed's and webhooks'). */

/** The resources that have events, and what happens to them. */
export const EVENT_RESOURCES = [
  'ticket',
  'deal',
  'contact',
  'message',
  'agent',
  'team',
  'organization',
  'import',
  'rule',
  'macro',
] as const;
export type EventResource = (typeof EVENT_RESOURCES)[number];
/**
 * Messages are written once and never change (decisions.md, "Conversations"): `message.created`, and for a
 * message the service e-mailed, `message.delivery_failed` when its mail was refused for good or bounced.
 */
export const EVENT_TYPES = [
  ...(['ticket', 'deal', 'contact'] as const).flatMap((r) => [`${r}.created`, `${r}.updated`]),
  'message.created',
  // Written by the outbox (lib/email/outbox.ts) when a reply's mail is refused for good or bounces.
  'message.delivery_failed',
  // Written by the breach runner when a service-level clock's due time passes (lib/tickets/breaches.ts).
  'ticket.sla_breached',
  // Deleting and restoring (lib/trash/delete.ts, restore.ts): the object as it was.
  ...(['ticket', 'deal', 'contact'] as const).flatMap((r) => [`${r}.deleted`, `${r}.restored`]),
  // An erasure's end (lib/erasures/job.ts): the uuids of what it changed, nothing personal.
  'contact.erased',
  // People (lib/people/): agents are never deleted (retired with `active: false`); teams are.
  'agent.created',
  'agent.updated',
  'team.created',
  'team.updated',
  'team.deleted',
  // Organizations (lib/organizations/organizations.ts): deleted for good, never to the trash.
  'organization.created',
  'organization.updated',
  'organization.deleted',
  // Rules and macros (lib/rules/resource.ts, macro-resource.ts): deleted for good.
  'rule.created',
  'rule.updated',
  'rule.deleted',
  'macro.created',
  'macro.updated',
  'macro.deleted',
  // An import job's end (lib/imports/): the job with its counts. The only event of an import webhooks receive.
  'import.completed',
  'import.failed',
];

/** What a type pattern may be: an event type, `<resource>.*`, or `*`. */
export const EVENT_TYPE_PATTERNS = [...EVENT_TYPES, ...EVENT_RESOURCES.map((r) => `${r}.*`), '*'];

/** Whether an event type is one of `patterns` asks for (the type itself, its `<resource>.*`, or `*`). */
export function matchesEventType(patterns: readonly string[], type: string): boolean {
  return patterns.some(
    (p) => p === '*' || p === type || (p.endsWith('.*') && type.startsWith(p.slice(0, -1))),
  );
}
