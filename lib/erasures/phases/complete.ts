import { completeErasure, forgetTouched, touchedObjects } from '#lib/data/erasures.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import type { Move } from '../move.ts';

/**
 * Phase `complete`: the record completed with its counts, the ledger entry, the progress item (the person's
 * identifiers) deleted, in one transaction with `contact.erased` (the uuids changed); then the TOUCHED items.
 */
export async function complete({ accountId, record, p, readStep }: Move): Promise<'completed'> {
  const completedAt = formatTimestamp(nowMicros());
  const touched = await touchedObjects(accountId, record.id);
  await completeErasure(
    accountId,
    { ...record, completedAt, counts: p.counts },
    { ...p, step: readStep },
    {
      type: 'contact.erased',
      object: { uuid: p.contact?.uuid ?? null, tickets: touched.ticket, deals: touched.deal },
      version: 1,
    },
  );
  await forgetTouched(accountId, record.id, touched);
  return 'completed';
}
