import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { type ErasureRecord, getErasureRecord, newErasureActions } from '#lib/data/erasures.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/requests/idempotency.ts';
import { commit } from '#lib/data/store/transact.ts';
import { NotFound } from '#lib/errors.ts';
import { formatTimestamp, nowMicros, nowMillis } from '#lib/time.ts';
import { parseInput, requiredEmail } from '#lib/validation.ts';
import { addressHash } from './address-hash.ts';
import { firstProgress } from './job.ts';

/**
 * `POST /api/erasures` and `GET /api/erasures/{id}` (decisions.md, "Deleting, restoring and erasing"): an
 * erasure is started at once (its record and its job's first progress, in one commit with the kept answer) and
 * run in the background by the erasure runner (lib/erasures/runner.ts). An address the account does not know
 * starts one too, which completes with zero counts: the answer says nothing of who is known.
 */
export const CreateErasureSchema = v.object({ email: requiredEmail('email') });

/** `ers_` + 13 digits of ms + 10 hex: time-ordered, unguessable. */
const ERASURE_ID_PATTERN = /^ers_\d{13}[0-9a-f]{10}$/;
const newErasureId = () => `ers_${String(nowMillis()).padStart(13, '0')}${randomBytes(5).toString('hex')}`;

export async function startErasure(
  accountId: string,
  body: unknown,
  attach: ((erasure: ErasureRecord) => CommitAttachment) | undefined,
): Promise<ErasureRecord> {
  const { email } = parseInput(CreateErasureSchema, body);
  const address = email.trim().toLowerCase();
  const record: ErasureRecord = {
    id: newErasureId(),
    status: 'running',
    requestedAt: formatTimestamp(nowMicros()),
    completedAt: null,
    counts: {},
    hash: addressHash(accountId, address),
  };
  const progress = firstProgress(address);
  await commit([
    ...newErasureActions(accountId, record, progress, nowMillis()),
    ...completionCommit(attach?.(record)),
  ]);
  return record;
}

export async function getErasure(accountId: string, id: string): Promise<ErasureRecord> {
  const record = ERASURE_ID_PATTERN.test(id) ? await getErasureRecord(accountId, id) : undefined;
  if (!record) throw new NotFound();
  return record;
}

/** The Erasure as the API shows it: no address, no hash. */
export function presentErasure(e: ErasureRecord) {
  return {
    id: e.id,
    status: e.status,
    requested_at: e.requestedAt,
    completed_at: e.completedAt,
    counts: e.counts,
  };
}
