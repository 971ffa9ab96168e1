import { reserveIds } from '#lib/data/accounts/accounts.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { getStoredMacro, macrosAfter, RuleGone, writeMacro } from '#lib/data/rules/rules.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { deleteVersioned, updateVersioned, type Versioned } from '#lib/versioned-update.ts';
import { pathId } from './list-query.ts';
import { presentMacro } from './present.ts';
import { refuseOversized, ruleReferences } from './resource.ts';
import { parseMacro } from './schemas.ts';
import type { Macro } from './types.ts';

/**
 * Macros as a resource (decisions.md, "Business rules": `{"id", "name", "actions", "created_at", "updated_at"}`,
 * the same actions as rules): list by id, read, create, PATCH, delete, each write with its event in one
 * transaction (lib/data/rules/rules.ts). Applying one to a ticket is the evaluation slice's.
 */

const CHANGED = 'The macro has changed since you read it (If-Match does not match its ETag).';

type Attach<T> = ((result: T) => CommitAttachment) | undefined;

export async function findMacro(accountId: string, ref: string): Promise<Versioned<Macro> | undefined> {
  const id = pathId(ref);
  return id === undefined ? undefined : getStoredMacro(accountId, id);
}

export async function getMacro(accountId: string, ref: string): Promise<Versioned<Macro>> {
  const found = await findMacro(accountId, ref);
  if (!found) throw new NotFound();
  return found;
}

export async function listMacros(accountId: string, query: { after: number; limit: number }) {
  const page = await macrosAfter(accountId, query.after, query.limit + 1);
  const shown = page.slice(0, query.limit);
  return {
    data: shown.map(presentMacro),
    next_cursor: page.length > query.limit ? String(shown.at(-1)?.id) : null,
  };
}

export async function createMacro(accountId: string, body: unknown, attach?: Attach<Macro>): Promise<Macro> {
  const input = parseMacro(body, await ruleReferences(accountId, [body], 0));
  const { macro: id } = await reserveIds(accountId, { macro: 1 });
  const at = formatTimestamp(nowMicros());
  const macro: Macro = { id: id as number, ...input, createdAt: at, updatedAt: at };
  refuseOversized(presentMacro(macro));
  await writeMacro(
    accountId,
    { id: macro.id, version: 0, macro },
    { event: createdEvent('macro', presentMacro(macro)), attach: attach?.(macro) },
  );
  return macro;
}

const answerOf = (error: unknown) => (error instanceof RuleGone ? new NotFound() : error);

/** `PATCH /api/macros/{macro}`: `name`, `actions` (the list replaced), checked as a create. */
export async function updateMacro(
  accountId: string,
  ref: string,
  body: unknown,
  options: { ifMatch?: string | undefined; attach?: Attach<Versioned<Macro>> } = {},
): Promise<Versioned<Macro>> {
  const sent = typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {};
  if (!Object.hasOwn(sent, 'name') && !Object.hasOwn(sent, 'actions')) {
    throw ValidationFailed.field('body', 'The request must change at least one field: name or actions.');
  }
  let refs: Awaited<ReturnType<typeof ruleReferences>> | undefined;
  return updateVersioned<Macro>({
    read: async () => {
      const found = await findMacro(accountId, ref);
      refs = found && (await ruleReferences(accountId, [body, presentMacro(found.entity)], 0));
      return found;
    },
    apply: (before) => {
      const shown = presentMacro(before);
      const input = parseMacro({ name: shown.name, actions: shown.actions, ...sent }, refs as never);
      const after = { ...before, ...input };
      refuseOversized(presentMacro(after));
      const same = JSON.stringify(presentMacro(after)) === JSON.stringify(shown);
      return same ? before : { ...after, updatedAt: formatTimestamp(nowMicros()) };
    },
    write: async (before, after, version) => {
      const event = updatedEvent('macro', presentMacro(before), presentMacro(after), version + 1);
      await writeMacro(
        accountId,
        { id: after.id, version, macro: after },
        { event, attach: options.attach?.({ entity: after, version: version + 1 }) },
      ).catch((error) => {
        throw answerOf(error);
      });
      return version + 1;
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
}

export async function deleteMacro(
  accountId: string,
  ref: string,
  options: { ifMatch?: string | undefined; attach?: Attach<Macro> } = {},
): Promise<Macro> {
  const deleted = await deleteVersioned<Macro>({
    read: () => findMacro(accountId, ref),
    remove: async ({ entity, version }) => {
      const event = { type: 'macro.deleted', object: presentMacro(entity), version: version + 1 };
      await writeMacro(
        accountId,
        { id: entity.id, version, macro: undefined },
        { event, attach: options.attach?.(entity) },
      ).catch((error) => {
        throw answerOf(error);
      });
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
  return deleted.entity;
}
