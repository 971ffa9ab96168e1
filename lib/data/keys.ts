/**
 * Key builders: the only code that writes a key string. Every item's pk/sk (and index keys) come from lib/data/keys/,
 * one file per concern, next to a short note of what the item is; this file gathers them for the data layer's
 * importers. The layout is explained in docs/data-model.md.
 */

export * from './keys/accounts.ts';
export * from './keys/api-keys.ts';
export * from './keys/erasures.ts';
export * from './keys/events.ts';
export * from './keys/handbacks.ts';
export * from './keys/idempotency.ts';
export * from './keys/imports.ts';
export * from './keys/index/entity.ts';
export * from './keys/index/order.ts';
export { BLOCK_SPREAD, blockGroupOf, COUNTER_SHARDS, NUMBERS_PER_BLOCK } from './keys/index/postings.ts';
export * from './keys/mail.ts';
export * from './keys/organizations.ts';
export * from './keys/queue.ts';
export * from './keys/rules.ts';
export { padId } from './keys/sort.ts';
export * from './keys/tickets.ts';
export * from './keys/trash.ts';
export * from './keys/webhooks.ts';
