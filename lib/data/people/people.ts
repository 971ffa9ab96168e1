import type { Agent, Team } from '#lib/accounts/types.ts';
import { type EventDraft, MAX_EVENT_ACTIONS } from '../events.ts';
import { writePlan } from '../index/write-plan.ts';
import { configKeys, peopleKeys } from '../keys.ts';
import { getItem, tableName } from '../store/client.ts';
import { ConcurrentWrite, StaleVersion } from '../store/errors.ts';
import { ATTR, entityOf } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * Agents and teams in the store (docs/data-model.md, "People"): each an item of the account's config partition
 * (`AGENT#<id>`, `TEAM#<id>`, what the configuration's one Query reads), versioned as tickets are, and beside it
 * the item that makes its natural key unique (an agent's e-mail, a team's name: keys/accounts.ts, peopleKeys). A
 * change of several of them (an agent and the teams it joins, a team and the agents it takes) is one transaction
 * with its events: each item on the condition that it is still at the version read, so membership, kept on the
 * agents alone, is never changed from a stale reading.
 */

/** The e-mail is another agent's: nothing was written. */
export class AgentEmailTaken extends Error {
  constructor() {
    super('Another agent has this e-mail');
  }
}

/** The name is another team's: nothing was written. */
export class TeamNameTaken extends Error {
  constructor() {
    super('Another team has this name');
  }
}

/**
 * The team a ticket's commit puts the ticket's open work in was deleted (its cell closed: lib/data/tickets/tickets.ts,
 * teamClosed): nothing was written.
 */
export class TeamGone extends Error {
  constructor() {
    super('The team was deleted');
  }
}

/** One agent as stored (strongly consistent: one GetItem), or undefined. */
export async function getStoredAgent(accountId: string, id: number): Promise<Agent | undefined> {
  const item = await getItem(configKeys.agent(accountId, id));
  return item ? entityOf<Agent>(item) : undefined;
}

/** One agent's or team's change: `version` as read (0: a new one); a team's `after` undefined: deleted. */
export type PeopleWrite =
  | { type: 'agent'; before: Agent | undefined; version: number; after: Agent }
  | { type: 'team'; before: Team | undefined; version: number; after: Team | undefined };

/** Writes the changes and their events in one transaction (StaleVersion when one was changed meanwhile). */
export async function writePeople(
  accountId: string,
  writes: PeopleWrite[],
  options: { attach?: CommitAction[] | undefined; events: EventDraft[]; handBack?: CommitAction | undefined },
): Promise<void> {
  await writePlan({
    fixed: [
      ...writes.flatMap((w) => actionsOf(accountId, w)),
      ...(options.handBack ? [options.handBack] : []),
    ],
    additions: [],
    attached: options.attach ?? [],
    events: options.events.length ? { accountId, drafts: options.events, reserved: [] } : undefined,
  });
}

/**
 * The commit actions writes take with their events (lib/data/events.ts, MAX_EVENT_ACTIONS each): one transaction
 * holds MAX_TRANSACTION_ITEMS, an Idempotency-Key's kept answer included.
 */
export function peopleActionCount(writes: PeopleWrite[]): number {
  return writes.reduce((n, w) => {
    const { take, release } = keysOf(w, (k) => ({ pk: k, sk: k }));
    // An agent's write may carry its queue's freed entry (lib/people/commit.ts): one Put more.
    return n + 1 + take.length + release.length + MAX_EVENT_ACTIONS + (w.type === 'agent' ? 1 : 0);
  }, 0);
}

/** The natural keys a write takes and gives up (an agent's e-mail, a team's name). */
function keysOf(write: PeopleWrite, keyOf: (value: string) => { pk: string; sk: string }) {
  return write.type === 'agent'
    ? uniqueness(write.before?.email, write.after.email, write.after.id, keyOf)
    : uniqueness(write.before?.name, write.after?.name, (write.after ?? write.before)?.id as number, keyOf);
}

function actionsOf(accountId: string, write: PeopleWrite): CommitAction[] {
  const key = configKeys[write.type](accountId, (write.after ?? write.before)?.id as number);
  const unique = keysOf(write, (k) =>
    write.type === 'agent' ? peopleKeys.agentEmail(accountId, k) : peopleKeys.teamName(accountId, k),
  );
  const taken = write.type === 'agent' ? () => new AgentEmailTaken() : () => new TeamNameTaken();
  return [
    itemAction(key, write),
    ...unique.release.map((k) => release(k.key, k.id)),
    ...unique.take.map((k) => take(k.key, k.id, write.type, taken)),
  ];
}

/** The entity's own item: put at the next version, or deleted, on the condition that it is at the version read. */
function itemAction(key: { pk: string; sk: string }, write: PeopleWrite): CommitAction {
  const guard = versionGuard(write.version);
  if (write.after === undefined) {
    return {
      what: write.type,
      action: { Delete: { TableName: tableName(), Key: key, ...guard } },
      refused: () => new StaleVersion(),
    };
  }
  const Item = { ...key, type: write.type, ...write.after, [ATTR.version]: write.version + 1 };
  return {
    what: write.type,
    action: { Put: { TableName: tableName(), Item, ...guard } },
    refused: () => (write.version === 0 ? new ConcurrentWrite() : new StaleVersion()),
  };
}

/** Items written before versions existed have none: they are at version 1 (as tickets' are). */
function versionGuard(version: number) {
  if (version === 0) return { ConditionExpression: 'attribute_not_exists(pk)' };
  return {
    ConditionExpression:
      version === 1 ? 'attribute_exists(pk) AND (attribute_not_exists(#v) OR #v = :v)' : '#v = :v',
    ExpressionAttributeNames: { '#v': ATTR.version },
    ExpressionAttributeValues: { ':v': version },
  };
}

type Keyed = { key: { pk: string; sk: string }; id: number };

/** The uniqueness items a change takes and gives up: only when its key (lower-cased) changes. */
function uniqueness(
  before: string | undefined,
  after: string | undefined,
  id: number,
  keyOf: (value: string) => { pk: string; sk: string },
): { take: Keyed[]; release: Keyed[] } {
  const same = before !== undefined && after !== undefined && before.toLowerCase() === after.toLowerCase();
  if (same) return { take: [], release: [] };
  return {
    take: after === undefined ? [] : [{ key: keyOf(after), id }],
    release: before === undefined ? [] : [{ key: keyOf(before), id }],
  };
}

/**
 * Takes a natural key: refused when another holds it. Its own id passes (an item an earlier attempt of the same
 * change left cannot be, the commit is one transaction; but an account file's agent written before these items
 * existed has none, and takes it with its first change).
 */
function take(
  key: { pk: string; sk: string },
  id: number,
  type: 'agent' | 'team',
  refused: () => Error,
): CommitAction {
  return {
    what: `${type}_key`,
    action: {
      Put: {
        TableName: tableName(),
        Item: { ...key, type: `${type}_key`, id },
        ConditionExpression: 'attribute_not_exists(pk) OR id = :id',
        ExpressionAttributeValues: { ':id': id },
      },
    },
    refused,
  };
}

/** Gives up a natural key the entity holds (none, for an account file's agent written before these items). */
function release(key: { pk: string; sk: string }, id: number): CommitAction {
  return {
    what: 'people_key_release',
    action: {
      Delete: {
        TableName: tableName(),
        Key: key,
        ConditionExpression: 'attribute_not_exists(pk) OR id = :id',
        ExpressionAttributeValues: { ':id': id },
      },
    },
  };
}
