import { isDeepStrictEqual } from 'node:util';
import { getCachedAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig, Contact } from '#lib/accounts/types.ts';
import { updateDeal as writeDeal } from '#lib/data/deals/deals.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/requests/idempotency.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { updatedEvent } from '#lib/events/drafts.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { updateVersioned } from '#lib/versioned-update.ts';
import { findDeal } from './get-deal.ts';
import { type PipelineStage, resolveStage, stageById } from './pipeline-stage.ts';
import { presentDealDetail } from './present.ts';
import { type UpdateDealInput, UpdateDealSchema } from './schemas.ts';
import type { Deal } from './types.ts';

export interface UpdateDealOptions {
  /** The If-Match header as sent, if any. */
  ifMatch?: string | undefined;
  /** What to write with the change (an Idempotency-Key's kept answer), given the deal and its new version. */
  attach?: ((updated: UpdatedDeal) => CommitAttachment) | undefined;
}

/** A deal after a PATCH: its version (the ETag) and its contact as it is now. */
export interface UpdatedDeal {
  deal: Deal;
  version: number;
  contact: Contact | undefined;
}

/**
 * The `updateDeal` route (decisions.md, "Deals that move"): reads the deal with its contact (1 round trip),
 * applies the change (stage moves with their probability, won/lost/reopen with their timestamps and reason),
 * and writes deal, index and board counters in one transaction guarded by the version read (1 round trip).
 */
export async function updateDeal(
  accountId: string,
  ref: string,
  body: unknown,
  options: UpdateDealOptions = {},
): Promise<UpdatedDeal> {
  const input = parseInput(UpdateDealSchema, body);
  const config = await getCachedAccountConfig(accountId);
  if (!config) throw new NotFound();
  const target = resolveStage(config, input);
  let contact: Contact | undefined;
  const updated = await updateVersioned<Deal>({
    read: async () => {
      const stored = await findDeal(accountId, ref);
      contact = stored?.contact;
      return stored;
    },
    apply: (before) => applyDealChange(before, input, target, config, nowMicros()),
    write: (before, after, version) =>
      writeDeal(
        accountId,
        { before, after, version },
        {
          attach: completionCommit(options.attach?.({ deal: after, version: version + 1, contact })),
          event: updatedEvent(
            'deal',
            presentDealDetail(before, contact),
            presentDealDetail(after, contact),
            version + 1,
          ),
        },
      ),
    ifMatch: options.ifMatch,
    changedMessage: 'The deal has changed since you read it (If-Match does not match its ETag).',
  });
  return { deal: updated.entity, version: updated.version, contact };
}

/**
 * The deal after the change (pure): probability is the stage's while open, 100 won, 0 lost; entering won sets
 * won_at, entering lost sets lost_at (and clears the other); reopening clears won_at, lost_at and lost_reason.
 * A lost_reason needs a lost deal. updated_at moves when anything changed.
 */
export function applyDealChange(
  before: Deal,
  input: UpdateDealInput,
  target: PipelineStage | undefined,
  config: AccountConfig,
  nowUs: number,
): Deal {
  const now = formatTimestamp(nowUs);
  const after: Deal = { ...before };
  if (input.name !== undefined) after.name = input.name;
  if (input.amount !== undefined) after.amount = input.amount;
  if (input.currency !== undefined) after.currency = input.currency;
  if (input.expected_close_date !== undefined) after.expectedCloseDate = input.expected_close_date;
  if (target) {
    after.pipeline = { id: target.pipeline.id, name: target.pipeline.name };
    after.stage = { id: target.stage.id, name: target.stage.name, color: target.stage.color };
  }
  if (input.status !== undefined && input.status !== before.status) {
    after.status = input.status;
    after.wonAt = input.status === 'won' ? now : null;
    after.lostAt = input.status === 'lost' ? now : null;
    if (input.status !== 'lost') after.lostReason = null;
  }
  if (input.lost_reason !== undefined) {
    if (after.status !== 'lost' && input.lost_reason !== null) {
      throw ValidationFailed.field('lost_reason', 'The lost reason field is only allowed for a lost deal.');
    }
    after.lostReason = input.lost_reason;
  }
  const stageProbability = stageById(config, after.stage.id)?.stage.probability ?? before.probability;
  after.probability = after.status === 'won' ? 100 : after.status === 'lost' ? 0 : stageProbability;
  if (!isDeepStrictEqual(after, before)) after.updatedAt = now;
  return after;
}
