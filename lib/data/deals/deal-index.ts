import type { Deal, DealFilter } from '#lib/deals/types.ts';
import { textWords, usefulTerms } from '#lib/search.ts';
import { parseTimestamp } from '#lib/time.ts';
import { contacts } from '../contacts/contact-index.ts';
import { dimensionName } from '../index/dimensions.ts';
import { indexedEntity } from '../index/engine.ts';
import { queryTerm } from '../index/term-reads.ts';
import { orderKeys } from '../keys.ts';

/** The board's counters in the deals' stats cells (their values: `<stage id>#<currency>`, `<pipeline id>#<currency>`). */
export const BOARD = {
  open: 'open',
  openSum: 'open_sum',
  won: 'won',
  wonSum: 'won_sum',
  lost: 'lost',
  lostSum: 'lost_sum',
} as const;

const STAGE_BOARD = { family: 'stage_board', sharded: true };
const PIPELINE_BOARD = { family: 'pipeline_board', sharded: true };
/** The families the board reads. */
export const BOARD_FAMILIES = [STAGE_BOARD.family, PIPELINE_BOARD.family];

/**
 * How deals are indexed (lib/data/index/): by pipeline, stage, status, currency and contact, with queues for a
 * stage's or a pipeline's open (won, lost) deals and a contact's; found by the words of their name and of their
 * contact's name and e-mail as the contact is now. Stats cells keep the pipeline board: per stage and currency
 * the open deals' count and exact amount, per pipeline and currency the won and lost ones', each cell sharded.
 */
export const deals = indexedEntity<Deal, DealFilter>({
  entity: 'DEAL',
  order: (d) => ({ createdMicros: parseTimestamp(d.createdAt), number: d.number }),
  dimensions: [
    {
      name: 'pipeline',
      values: (d) => [String(d.pipeline.id)],
      bounded: true,
      countedIn: { family: 'pipeline', sharded: true },
      queueTag: 'p',
    },
    {
      name: 'stage',
      values: (d) => [String(d.stage.id)],
      bounded: true,
      countedIn: { family: 'stage', sharded: true },
      queueTag: 's',
    },
    { name: 'status', values: (d) => [d.status], bounded: true, queueTag: 'st' },
    { queue: ['pipeline', 'status'] },
    { queue: ['stage', 'status'] },
    {
      name: 'currency',
      values: (d) => [d.currency],
      bounded: true,
      countedIn: { family: 'currency', sharded: true },
    },
    // Contacts are many: their deals are counted by a counter item each, and a contact's open deals by a queue.
    // Its values are ids the service handed out: readable in keys.
    { name: 'contact', values: (d) => [String(d.contact.id)], bounded: false, readable: true, queueTag: 'c' },
    { queue: ['contact', 'status'] },
  ],
  // The board: a sharded cell per stage and currency (open deals) and per pipeline and currency (won, lost).
  statsCounters: {
    [BOARD.open]: { adds: (d) => (d.status === 'open' ? { [stageCell(d)]: 1 } : {}), in: STAGE_BOARD },
    [BOARD.openSum]: {
      adds: (d) => (d.status === 'open' ? { [stageCell(d)]: d.amount } : {}),
      in: STAGE_BOARD,
    },
    [BOARD.won]: { adds: (d) => (d.status === 'won' ? { [pipelineCell(d)]: 1 } : {}), in: PIPELINE_BOARD },
    [BOARD.wonSum]: {
      adds: (d) => (d.status === 'won' ? { [pipelineCell(d)]: d.amount } : {}),
      in: PIPELINE_BOARD,
    },
    [BOARD.lost]: { adds: (d) => (d.status === 'lost' ? { [pipelineCell(d)]: 1 } : {}), in: PIPELINE_BOARD },
    [BOARD.lostSum]: {
      adds: (d) => (d.status === 'lost' ? { [pipelineCell(d)]: d.amount } : {}),
      in: PIPELINE_BOARD,
    },
  },
  search: (d) => ({ prefixes: usefulTerms(textWords(d.name)) }),
  // A word matches a deal whose contact's name or e-mail it matches, as the contact is now: the contacts it
  // finds name their deals' dimensions (renaming a contact rewrites no deal).
  searchRelated: async (accountId, word, budget, probed) => {
    const found = await queryTerm(contacts.index, accountId, word, budget, undefined, probed);
    return [...found].map((key) => dimensionName('contact', String(orderKeys.parts(key).number)));
  },
  filter: (f) => ({
    pipeline: f.pipelineId !== undefined ? [String(f.pipelineId)] : [],
    stage: f.stageId !== undefined ? [String(f.stageId)] : [],
    status: f.status ? [f.status] : [],
    currency: f.currency ? [f.currency] : [],
    contact: f.contactId !== undefined ? [String(f.contactId)] : [],
  }),
});

const stageCell = (d: Deal) => `${d.stage.id}#${d.currency}`;
const pipelineCell = (d: Deal) => `${d.pipeline.id}#${d.currency}`;

/** A board cell's value read back: the stage or pipeline id and the currency. */
export function parseBoardCell(value: string): { id: number; currency: string } {
  const [id, currency] = value.split('#');
  return { id: Number(id), currency: currency ?? '' };
}
