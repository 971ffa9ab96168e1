import { isDeepStrictEqual } from 'node:util';
import { ConcurrentWrite, retryOnConflict, StaleVersion } from '#lib/data/store/errors.ts';
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
  /** The entity after the change (pure; may refuse with a 422). */
  apply(before: E): E;
  /** Writes the change guarded by `version`; answers the new version (StaleVersion when another landed first). */
  write(before: E, after: E, version: number): Promise<number>;
  /** The If-Match header as sent, if any. */
  ifMatch?: string | undefined;
  /** What a 412 says. */
  changedMessage: string;
}

/**
 * A PATCH of a versioned entity (tickets, deals, contacts), as decisions.md has it: read (404), If-Match
 * against the ETag (412), the change applied; a change that changes nothing writes nothing and answers the
 * entity as it is; the write is guarded by the version read. Another update landing in between: with If-Match,
 * 412; without, the change is applied again to the entity as it now is.
 */
export async function updateVersioned<E>(update: VersionedUpdate<E>): Promise<Versioned<E>> {
  if (update.ifMatch !== undefined && update.ifMatch.length > MAX_IF_MATCH_LENGTH) {
    throw ValidationFailed.field(
      'if_match',
      `The If-Match header must not be greater than ${MAX_IF_MATCH_LENGTH} characters.`,
    );
  }
  return retryOnConflict(
    async () => {
      const stored = await update.read();
      if (!stored) throw new NotFound();
      const { ifMatch } = update;
      if (ifMatch !== undefined && !ifMatchHolds(ifMatch, etagOf(stored.version))) {
        throw new PreconditionFailed(update.changedMessage);
      }
      const after = update.apply(stored.entity);
      if (isDeepStrictEqual(after, stored.entity)) return stored;
      try {
        return { entity: after, version: await update.write(stored.entity, after, stored.version) };
      } catch (error) {
        if (error instanceof StaleVersion && ifMatch !== undefined) {
          throw new PreconditionFailed(update.changedMessage);
        }
        throw error;
      }
    },
    { retryable: (error) => error instanceof StaleVersion || error instanceof ConcurrentWrite },
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
