import { contacts } from './contacts/contact-index.ts';
import { deals } from './deals/deal-index.ts';
import { tickets } from './tickets/ticket-index.ts';

/** The entities an account's index can be rebuilt for, by their name in the admin command line. */
const INDEXED = { tickets, deals, contacts } as const;

export type IndexedEntityName = keyof typeof INDEXED;

export const isIndexedEntityName = (name: string): name is IndexedEntityName => Object.hasOwn(INDEXED, name);

/**
 * `<entity> reindex`: the account's index of one entity rebuilt from its entities (docs/data-model.md,
 * "Reindex"): per account, page by page, resumable.
 */
export async function rebuildIndexOf(
  entity: IndexedEntityName,
  accountId: string,
  options?: { pageSize?: number },
) {
  const { entities, written, removed, folded, emptied, resumed } = await INDEXED[entity].rebuild(
    accountId,
    options,
  );
  return { entities, written, removed, folded, emptied, resumed };
}
