import {
  findSourceKeys,
  pageOutcome,
  SourceKeyMoved,
  type SourceKeyRecord,
  type SourceKeyRef,
} from '#lib/data/imports/source-keys.ts';
import { markWouldCreate } from '#lib/data/imports/would-create.ts';
import { ConcurrentWrite, isTransactionConflict, StaleVersion } from '#lib/data/store/errors.ts';
import { ValidationFailed } from '#lib/errors.ts';
import { recordDigest } from './digest.ts';
import type { ImportType } from './records.ts';
import { countOutcome, type ImportContext, type ImportOutcome, type PageWritten } from './writing.ts';

/**
 * What the people writers share (./people.ts): each record looked up by its source key and decided (created,
 * updated, unchanged), written in one commit with its key, decided again when another run or change landed first,
 * and a record that cannot be written an error row (`failed`), never a thrown error. A store that fails is thrown:
 * the engine tries the page again from its checkpoint, and the keys make that safe.
 */

/** A record that cannot be written as the source has it: its error row's reason. */
export class RecordRefused extends Error {}

/** How many times one record is decided again after losing a race before it is an error row. */
const ATTEMPTS = 4;

/** One record as a writer decides it: the source's `ref`, its digest, the key as found (undefined: none). */
export interface Keyed<R> {
  record: R;
  ref: SourceKeyRef;
  digest: string;
  found: SourceKeyRecord | undefined;
}

export interface TypeWriter<R> {
  type: ImportType;
  sourceIdOf: (record: R) => string;
  /** Checks a record before anything is decided (its notes, such as a dropped domain, into `written.errors`). */
  check?: (record: R) => R;
  /** Reads again what the writer decides on (after a lost race). */
  reread?: () => Promise<void>;
  /** Decides and (unless validating) writes a record whose digest is not the key's. */
  write: (keyed: Keyed<R>) => Promise<ImportOutcome>;
}

export async function writeEach<R>(
  ctx: ImportContext,
  records: readonly R[],
  written: PageWritten,
  writer: TypeWriter<R>,
): Promise<void> {
  if (records.length === 0) return;
  const { type, sourceIdOf } = writer;
  const find = (ids: string[]) => findSourceKeys(ctx.accountId, ctx.source, type, ids);
  const keys = await find(records.map(sourceIdOf));
  // Validating: the people a run would create (or match) by now, marked for the tickets that name them.
  const would: SourceKeyRef[] = [];
  for (const raw of records) {
    const sourceId = sourceIdOf(raw);
    const ref: SourceKeyRef = { source: ctx.source, type, sourceId };
    try {
      const record = writer.check ? writer.check(raw) : raw;
      const digest = recordDigest(raw);
      let found = keys.get(sourceId);
      for (let attempt = 1; ; attempt++) {
        try {
          const now =
            found?.digest === digest ? 'unchanged' : await writer.write({ record, ref, digest, found });
          const outcome = pageOutcome(found, ctx.mark, now);
          countOutcome(written, type, outcome);
          if (ctx.validate && !found && outcome !== 'failed') would.push(ref);
          break;
        } catch (error) {
          // Lost to another run (its key, its version) or to a concurrent change: decide again from a new reading.
          const lost =
            error instanceof SourceKeyMoved ||
            error instanceof StaleVersion ||
            error instanceof ConcurrentWrite ||
            isTransactionConflict(error);
          // Refused while creating: another run may have made it meanwhile (its e-mail, its name held).
          if ((!lost && found) || attempt >= ATTEMPTS) throw error;
          const again = (await find([sourceId])).get(sourceId);
          const raced = !found && again !== undefined;
          if (!lost && !raced) throw error;
          found = again;
          await writer.reread?.();
        }
      }
    } catch (error) {
      if (!(error instanceof RecordRefused || error instanceof ValidationFailed)) throw error;
      written.errors.push({ type, sourceId, reason: error.message });
      countOutcome(written, type, 'failed');
    }
  }
  if (would.length > 0) await markWouldCreate(ctx.accountId, ctx.importId, would);
}
