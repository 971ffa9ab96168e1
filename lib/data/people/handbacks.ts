import { ALL_DUE_SHARDS, type DueCursors, dueWindowOf, moveDueEntry } from '../index/due.ts';
import { handBackKeys } from '../keys.ts';
import { getItem, tableName } from '../store/client.ts';
import { saveAtRevision } from '../store/revision.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * A hand-back (docs/data-model.md, "People"): an item written in the people change's own transaction (a retirement,
 * agents leaving teams, a team's deletion), so a change that commits always hands back, naming each agent and the
 * team left (null: every team, a retirement) with where its sweep of the agent's open tickets is (`step`: which open
 * status, `after`: the last order key read). The runner (lib/people/handback-runner.ts) moves it on a step at a
 * time, each save guarded by the item's `rev`, so two overlapping runs never both move it; it is deleted once every
 * agent's sweep is done.
 */

export interface HandBackPart {
  agent: number;
  /** The team the agent left, or null: every team (retired). */
  team: number | null;
  /** The open status being swept (an index of the open statuses) and the last order key read in it. */
  step: number;
  after: string | null;
  /** Sweeps of a retirement begun again because the agent's open work was not 0 at the end of one. */
  rounds?: number;
}

export interface HandBack {
  accountId: string;
  id: string;
  parts: HandBackPart[];
  rev: number;
}

/** The hand-back item of a people change, due at once: one Put in the change's transaction. */
export function handBackAction(
  accountId: string,
  id: string,
  parts: HandBackPart[],
  atMs: number,
): CommitAction {
  return {
    what: 'hand_back',
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...handBackKeys.handBack(accountId, id),
          ...handBackKeys.due(accountId, id, atMs),
          type: 'hand_back',
          id,
          parts,
          rev: 0,
        },
      },
    },
  };
}

/** The hand-backs due at `nowMs`: a window of the due index, a page a shard from where the last ended (dueWindow). */
export async function dueHandBackWindow(
  nowMs: number,
  cursors: DueCursors,
): Promise<{ entries: { accountId: string; id: string }[]; more: boolean }> {
  return dueWindowOf(handBackKeys, nowMs, ALL_DUE_SHARDS, cursors);
}

/** A hand-back as stored (strongly consistent), or undefined once it is done. */
export async function getHandBack(accountId: string, id: string): Promise<HandBack | undefined> {
  const item = await getItem(handBackKeys.handBack(accountId, id));
  if (!item) return undefined;
  return { accountId, id, parts: item.parts as HandBackPart[], rev: Number(item.rev) };
}

/**
 * Saves a hand-back's progress at the revision read: false when another run moved it first (this one stops, the
 * other goes on). No part left: the item is deleted.
 */
export async function saveHandBack(handBack: HandBack, parts: HandBackPart[]): Promise<boolean> {
  return saveAtRevision({
    Key: handBackKeys.handBack(handBack.accountId, handBack.id),
    rev: handBack.rev,
    fields: parts.length === 0 ? null : { parts },
  });
}

/** Moves a hand-back's due entry to `atMs` (a step that failed); gone: nothing. */
export async function postponeHandBack(accountId: string, id: string, atMs: number): Promise<void> {
  await moveDueEntry(handBackKeys.handBack(accountId, id), handBackKeys.due(accountId, id, atMs));
}
