import { isDeepStrictEqual } from 'node:util';
import { lostToRace, retryOnConflict, StaleVersion } from '#lib/data/store/errors.ts';
import type { Versioned } from '#lib/data/store/items.ts';
import { NotFound, PreconditionFailed, ValidationFailed } from '#lib/errors.ts';

/** An entity as read, with the version its ETag names: the data layer's one name for it. */
export type { Versioned } from '#lib/data/store/items.ts';

/** The ETag of a version: strong, quoted. */
export const etagOf = (version: number) => `"${version}"`;

/**
 * The longest If-Match header taken (a list of about a hundred ETags): a longer one is a 422 on `if_match`, before
 * anything is read.
 */
export const MAX_IF_MATCH_LENGTH = 1024;

/** `If-Match: *`, or a list of entity tags one of which is the current one (strong comparison). */
export function ifMatchHolds(header: string, etag: string): boolean {
  const value = header.trim();
  if (value === '*') return true;
  return value.split(',').some((tag) => tag.trim() === etag);
}

export interface VersionedUpdate<E> {
  /** Reads the entity and its version (undefined: 404). */
  read(): Promise<Versioned<E> | undefined>;
  /**
   * The entity after the change (may refuse with a 422). Pure, or reading what the change decides on (a ticket's
   * rules: the organizations and open work they name, lib/rules/run.ts): read again with the entity on a retry.
   */
  apply(before: E): E | Promise<E>;
  /** Writes the change guarded by `version`; answers the new version (StaleVersion when another landed first). */
  write(before: E, after: E, version: number): Promise<number>;
  /** The If-Match header as sent, if any. */
  ifMatch?: string | undefined;
  /** What a 412 says. */
  changedMessage: string;
}

/** The If-Match header's length, checked before anything is read: a 422 on `if_match` past MAX_IF_MATCH_LENGTH. */
export function checkIfMatchLength(ifMatch: string | undefined): void {
  if (ifMatch !== undefined && ifMatch.length > MAX_IF_MATCH_LENGTH) {
    throw ValidationFailed.field(
      'if_match',
      `The If-Match header must not be greater than ${MAX_IF_MATCH_LENGTH} characters.`,
    );
  }
}

/**
 * A change of a versioned entity as decisions.md has it: read (404), If-Match against the ETag (412), then
 * `change`, whose write is guarded by the version read. Another change landing in between (StaleVersion): with
 * If-Match, 412; without, read and decide again (as a ConcurrentWrite is).
 */
function versionedChange<E, T>(
  read: () => Promise<Versioned<E> | undefined>,
  guard: { ifMatch?: string | undefined; changedMessage: string },
  change: (stored: Versioned<E>) => Promise<T>,
): Promise<T> {
  const { ifMatch, changedMessage } = guard;
  checkIfMatchLength(ifMatch);
  return retryOnConflict(
    async () => {
      const stored = await read();
      if (!stored) throw new NotFound();
      if (ifMatch !== undefined && !ifMatchHolds(ifMatch, etagOf(stored.version))) {
        throw new PreconditionFailed(changedMessage);
      }
      try {
        return await change(stored);
      } catch (error) {
        if (error instanceof StaleVersion && ifMatch !== undefined)
          throw new PreconditionFailed(changedMessage);
        throw error;
      }
    },
    { retryable: lostToRace },
  );
}

/**
 * A versioned update's read, begun at once, beside what the caller awaits before the update (the current account
 * configuration, which waits for the request's rate count): the update's first read takes it, a retry reads again.
 */
export function firstReadBeside<T>(read: () => Promise<T>): () => Promise<T> {
  let first: Promise<T> | undefined = read();
  first.catch(() => {}); // awaited by the update's first read; unused when what came before it threw
  return () => {
    const next = first ?? read();
    first = undefined;
    return next;
  };
}

/**
 * A PATCH of a versioned entity (tickets, deals, contacts), as decisions.md has it: read (404), If-Match
 * against the ETag (412), the change applied; a change that changes nothing writes nothing and answers the
 * entity as it is; the write is guarded by the version read. Another update landing in between: with If-Match,
 * 412; without, the change is applied again to the entity as it now is.
 */
export function updateVersioned<E>(update: VersionedUpdate<E>): Promise<Versioned<E>> {
  return versionedChange(
    () => update.read(),
    update,
    async (stored) => {
      const after = await update.apply(stored.entity);
      if (isDeepStrictEqual(after, stored.entity)) return stored;
      return { entity: after, version: await update.write(stored.entity, after, stored.version) };
    },
  );
}

/**
 * A DELETE of a versioned entity that is removed for good (an organization): read (404), If-Match (412), the
 * removal guarded by the version read (as updateVersioned's write). Answers the entity as it was.
 */
export function deleteVersioned<E>(removal: {
  read(): Promise<Versioned<E> | undefined>;
  remove(stored: Versioned<E>): Promise<void>;
  ifMatch?: string | undefined;
  changedMessage: string;
}): Promise<Versioned<E>> {
  return versionedChange(
    () => removal.read(),
    removal,
    async (stored) => {
      await removal.remove(stored);
      return stored;
    },
  );
}
