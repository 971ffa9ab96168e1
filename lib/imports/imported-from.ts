import type { ImportedFrom } from '#lib/accounts/types.ts';
import type { EventDraft } from '#lib/data/events.ts';

/**
 * `imported_from` (issue 42): where an imported object came from, as its API answer shows it; null on an object
 * made otherwise (an agent or a contact an import only matched by e-mail included).
 */
export function presentImportedFrom(from: ImportedFrom | undefined) {
  return from ? { source: from.source, id: from.id, import_id: from.importId } : null;
}

export type ImportedFromView = ReturnType<typeof presentImportedFrom>;

/**
 * An event of an imported change: `import_id` at the event's top level and on its item (spec/decisions.md,
 * "Imports"; webhook fan-out leaves those out: lib/webhooks/fan-out.ts).
 */
export const importEvent = (draft: EventDraft, importId: string): EventDraft => ({ ...draft, importId });
