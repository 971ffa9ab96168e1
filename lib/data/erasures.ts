import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Contact } from '#lib/accounts/types.ts';
import { batchDeleteAll, dynamo, getItem, queryAll, tableName } from './client.ts';
import { contacts } from './contact-index.ts';
import { releaseEmail } from './contacts.ts';
import { ConcurrentWrite, isConditionFailure } from './errors.ts';
import { type EventDraft, PART_BYTES, placeItems } from './events.ts';
import { dimensionName } from './index/declaration.ts';
import { forgetDirectoryEntry } from './index/directory.ts';
import { ALL_DUE_SHARDS, dueSortKeys } from './index/due.ts';
import { writePlan } from './index/write-plan.ts';
import { ATTR, entityOf, type ItemKey, type Versioned } from './items.ts';
import {
  erasureKeys,
  eventKeys,
  messageKeys,
  objectRefKeys,
  orderKeys,
  personRefKeys,
  trashKeys,
} from './keys.ts';
import { outboxUnchanged } from './outbox.ts';
import { tickets } from './ticket-index.ts';
import { type CommitAction, commit } from './transact.ts';

/**
 * Erasures in the store (docs/data-model.md, "Erasures"): the record the API answers, the job's progress item,
 * the running erasure's due entry, the ledger; and the reads and rewrites the job makes of the items that hold a
 * copy of a person (found by their object reference, never by a Scan). Nothing here decides what is personal:
 * the job (lib/erasures/job.ts) hands a rewrite function.
 */

/** An erasure as kept: no address, only its keyed hash (`hash`). */
export interface ErasureRecord {
  id: string;
  status: 'running' | 'completed';
  requestedAt: string;
  completedAt: string | null;
  counts: Record<string, number>;
  hash: string;
}

/** The job's state between steps: deleted in the step that completes it. */
export interface ErasureProgress {
  /** Bumped by every step: a step's save holds only if no other runner saved since it read. */
  step: number;
  phase: string;
  /** Where the phase is (the next deal's order key, a trash page's last key), or null at its start. */
  at: string | null;
  /** The object the phase is working on (a ticket, deal or contact uuid), its sub-phase and where that is. */
  object: string | null;
  sub: string | null;
  subAt: string | null;
  /** The person's identifiers while the job runs (the only place they are kept: gone when it completes). */
  person: { email: string; names: string[]; phones: string[] };
  contact: { id: number; uuid: string } | null;
  counts: Record<string, number>;
  /** A mentioned ticket's description is the person's (a follow-up their mail opened): its copies are erased so. */
  describedByPerson?: boolean | undefined;
  /** The mentioned ticket's person reference token as read when chosen (its delete holds only on it). */
  refToken?: string | null | undefined;
}

const RECORD = 'erasure';
const PROGRESS = 'erasure_progress';

/** The create's two puts (record and progress, the record due now), for one commit with the kept answer. */
export function newErasureActions(
  accountId: string,
  record: ErasureRecord,
  progress: ErasureProgress,
  nowMs: number,
): CommitAction[] {
  return [
    {
      what: 'erasure',
      action: {
        Put: {
          TableName: tableName(),
          Item: {
            ...erasureKeys.record(accountId, record.id),
            ...erasureKeys.due(accountId, record.id, nowMs),
            type: RECORD,
            ...record,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
    {
      what: 'erasure_progress',
      action: {
        Put: {
          TableName: tableName(),
          Item: { ...erasureKeys.progress(accountId, record.id), type: PROGRESS, ...progress },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
  ];
}

export async function getErasureRecord(accountId: string, id: string): Promise<ErasureRecord | undefined> {
  const item = await getItem(erasureKeys.record(accountId, id));
  return item && item.type === RECORD ? entityOf<ErasureRecord>(item) : undefined;
}

export async function getErasureProgress(
  accountId: string,
  id: string,
): Promise<ErasureProgress | undefined> {
  const item = await getItem(erasureKeys.progress(accountId, id));
  return item && entityOf<ErasureProgress>(item);
}

/** Another runner saved a step of this erasure since this one read it: this one stops, that one goes on. */
export class ErasureStepTaken extends Error {
  constructor() {
    super('Another runner took this erasure step');
  }
}

/** Saves the progress of a step, on the condition that it is still the step read (the next step's number). */
export async function saveErasureProgress(
  accountId: string,
  id: string,
  progress: ErasureProgress,
): Promise<void> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...erasureKeys.progress(accountId, id), type: PROGRESS, ...progress },
        ConditionExpression: 'step = :read',
        ExpressionAttributeValues: { ':read': progress.step - 1 },
      }),
    );
  } catch (error) {
    if (isConditionFailure(error)) throw new ErasureStepTaken();
    throw error;
  }
}

/** Running erasures due at `nowMs`, earliest first (one Query per due shard, at once). */
export async function dueErasures(
  nowMs: number,
  limit: number,
): Promise<{ accountId: string; id: string }[]> {
  const keys = await dueSortKeys(
    {
      indexName: erasureKeys.dueIndex,
      partition: erasureKeys.duePartition,
      before: erasureKeys.dueBefore(nowMs),
    },
    limit,
    ALL_DUE_SHARDS,
  );
  return keys.map((sk) => erasureKeys.parseDue(sk));
}

/**
 * The completion, in one transaction with the `contact.erased` event: the record completed with its counts and
 * out of the due index, the ledger entry (hashes only), the progress item (the identifiers) deleted.
 */
export async function completeErasure(
  accountId: string,
  record: ErasureRecord,
  progress: ErasureProgress,
  event: EventDraft,
): Promise<void> {
  const completed = { ...record, status: 'completed' as const };
  await writePlan({
    fixed: [
      {
        what: 'erasure',
        action: {
          Put: {
            TableName: tableName(),
            Item: { ...erasureKeys.record(accountId, record.id), type: RECORD, ...completed },
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      },
      {
        what: 'erasure_ledger',
        action: {
          Put: {
            TableName: tableName(),
            Item: {
              ...erasureKeys.ledger(accountId, record.id),
              type: 'erasure_ledger',
              accountId,
              id: record.id,
              hash: record.hash,
              completedAt: record.completedAt,
            },
          },
        },
      },
      {
        what: 'erasure_progress',
        action: {
          Delete: {
            TableName: tableName(),
            Key: erasureKeys.progress(accountId, record.id),
            ConditionExpression: 'step = :read',
            ExpressionAttributeValues: { ':read': progress.step },
          },
        },
        refused: () => new ErasureStepTaken(),
      },
    ],
    additions: [],
    attached: [],
    events: { accountId, drafts: [event], reserved: [] },
  });
}

/** Every ledger entry (the replay's list): the account, the erasure's id and its hash. */
export async function ledgerEntries(
  table = tableName(),
): Promise<{ accountId: string; id: string; hash: string }[]> {
  const items = await queryAll({
    TableName: table,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': erasureKeys.ledgerPartition },
    ConsistentRead: true,
  });
  return items.map((i) => ({ accountId: String(i.accountId), id: String(i.id), hash: String(i.hash) }));
}

/** Writes a ledger entry again (the replay copies the ledger of the table that was live into a restored one). */
export async function putLedgerEntry(entry: { accountId: string; id: string; hash: string }): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...erasureKeys.ledger(entry.accountId, entry.id), type: 'erasure_ledger', ...entry },
    }),
  );
}

/** The first `limit` sort keys of a partition at or after `from` (postings: order keys sort above counters). */
export async function sortKeysFrom(pk: string, from: string, limit: number): Promise<string[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk >= :from',
      ExpressionAttributeValues: { ':pk': pk, ':from': from },
      ProjectionExpression: 'sk',
      Limit: limit,
      ConsistentRead: true,
    }),
  );
  return (Items ?? []).map((i) => String(i.sk));
}

/** Every item of a partition (keys and what the job needs to decide): bounded partitions only. */
export async function partitionItems(pk: string): Promise<Record<string, unknown>[]> {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ConsistentRead: true,
  });
}

/** The items holding a copy of an object (its references, gsi2 keys only), after `after`, at most `limit`. */
export async function objectRefs(
  accountId: string,
  objectUuid: string,
  after: string | null,
  limit: number,
): Promise<(ItemKey & { ref: string })[]> {
  return refsPage(objectRefKeys.index, objectRefKeys.partition(accountId, objectUuid), after, limit);
}

/** A page of references (a keys-only index partition: each item's key and its index sort key, `ref`). */
async function refsPage(
  index: string,
  partition: string,
  after: string | null,
  limit: number,
): Promise<(ItemKey & { ref: string })[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: index,
      KeyConditionExpression: after === null ? 'gsi2pk = :pk' : 'gsi2pk = :pk AND gsi2sk > :after',
      ExpressionAttributeValues: { ':pk': partition, ...(after === null ? {} : { ':after': after }) },
      Limit: limit,
    }),
  );
  return (Items ?? []).map((i) => ({ pk: String(i.pk), sk: String(i.sk), ref: String(i.gsi2sk) }));
}

/**
 * The erasure rewrite counter (`erw`): every rewrite an erasure makes of an item (a message, an event, a kept
 * answer, an inbound log entry) sets it one higher, on the condition that it is still the value read. Two
 * erasures rewriting the same item (two people on one ticket, erased at once) cannot both write what they read:
 * the second one's condition fails, and it reads the item again, with the first one's redaction, and redacts that.
 */
const ERW = ATTR.erasureRewrites;

/** The condition that an item is as read (its `erw`), and the value its rewrite takes. */
function asRead(item: Record<string, unknown>): {
  condition: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
  next: number;
} {
  const read = item[ERW];
  return typeof read === 'number'
    ? { condition: '#erw = :erw', names: { '#erw': ERW }, values: { ':erw': read }, next: read + 1 }
    : {
        condition: 'attribute_exists(pk) AND attribute_not_exists(#erw)',
        names: { '#erw': ERW },
        values: {},
        next: 1,
      };
}

/**
 * The Put of an item rewritten whole, on the condition that it is as read (`before`'s `erw`, asRead) and, for a
 * mail of the outbox, that its outbox state is still the one read (outboxUnchanged): its `erw` one higher.
 */
function rewrittenPut(item: Record<string, unknown>, before: Record<string, unknown>) {
  const read = asRead(before);
  const outbox = outboxUnchanged(before);
  const values = { ...read.values, ...(outbox?.values ?? {}) };
  return {
    TableName: tableName(),
    Item: { ...item, [ERW]: read.next },
    ConditionExpression: `${read.condition}${outbox ? ` AND ${outbox.condition}` : ''}`,
    ExpressionAttributeNames: { ...read.names, ...(outbox?.names ?? {}) },
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}

/** How many times a rewrite reads an item again after a racing rewrite before the step fails (and is retried). */
const REWRITE_TRIES = 5;

/** An item as stored now (a rewrite raced: read again), or undefined. */
export async function readAgain(key: ItemKey): Promise<Record<string, unknown> | undefined> {
  return getItem({ pk: key.pk, sk: key.sk });
}

/**
 * Rewrites one item (a kept answer, an inbound log entry) as `rewrite` gives it, on the condition that it is
 * still as read (its `erw`): a concurrent rewrite wins, and this one reads it again and rewrites that (at most
 * REWRITE_TRIES times, then ConcurrentWrite: the step is tried again); undefined from `rewrite`: leave it.
 * Answers whether it changed.
 */
export async function rewriteItem(
  key: ItemKey,
  rewrite: (
    item: Record<string, unknown>,
  ) => Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined>,
): Promise<boolean> {
  for (let tries = 0; tries < REWRITE_TRIES; tries++) {
    const item = await getItem({ pk: key.pk, sk: key.sk });
    if (!item) return false;
    const next = await rewrite(item);
    if (!next) return false;
    if (await putRewritten(next, item)) return true;
  }
  throw new ConcurrentWrite();
}

/**
 * A page of a person's references (gsi2 `PERSON_REFS#<acc>#<hash>`, keys only) after `after`: ticket refs
 * (`ticket#<uuid>`, their own item) and inbound log entries (`inbound#<id>`, the entry), at most `limit`.
 */
export async function personRefs(
  accountId: string,
  hash: string,
  after: string | null,
  limit: number,
): Promise<(ItemKey & { ref: string })[]> {
  return refsPage(personRefKeys.index, personRefKeys.partition(accountId, hash), after, limit);
}

/**
 * The addresses a person's references lead to (the replay's candidates for a person no index names: their mail
 * on others' tickets): the sender of each inbound entry referred to, and the `from`, `to` and `cc` of each
 * ticket's description mail and messages, a page at a time; the caller stops at the one whose hash matches.
 */
export async function* referencedAddresses(accountId: string, hash: string): AsyncGenerator<string> {
  const mailAddresses = (mail: unknown): string[] => {
    const email = (mail as { email?: Record<string, unknown> } | undefined)?.email;
    if (!email) return [];
    const from = (email.from as { email?: unknown } | undefined)?.email;
    return [from, ...[email.to, email.cc].flatMap((list) => (Array.isArray(list) ? list : []))].filter(
      (a): a is string => typeof a === 'string',
    );
  };
  let after: string | null = null;
  for (;;) {
    const refs = await personRefs(accountId, hash, after, 25);
    for (const ref of refs) {
      const [kind, id] = [ref.ref.slice(0, ref.ref.indexOf('#')), ref.ref.slice(ref.ref.indexOf('#') + 1)];
      if (kind === 'inbound') {
        const from = (await getItem({ pk: ref.pk, sk: ref.sk }))?.from;
        if (typeof from === 'string') yield from;
        continue;
      }
      const ticket = await tickets.getByUuid(accountId, id);
      yield* mailAddresses(ticket?.entity.descriptionEmail);
      for (let number = 1; ; ) {
        const page = await messageItems(accountId, id, number, 100);
        for (const message of page) yield* mailAddresses(message);
        if (page.length < 100) break;
        number = Number(page.at(-1)?.number ?? number + 100);
      }
    }
    if (refs.length < 25) return;
    after = refs.at(-1)?.ref ?? null;
  }
}

/**
 * The token of a person's reference to a ticket (`w`, new with each Put): null for a reference written before
 * tokens (or none), read before the erasure reads the ticket's messages.
 */
export async function personRefToken(
  accountId: string,
  hash: string,
  ticketUuid: string,
): Promise<string | null> {
  const { pk, sk } = personRefKeys.ticket(accountId, hash, ticketUuid);
  const item = await getItem({ pk, sk });
  return typeof item?.w === 'string' ? item.w : null;
}

/**
 * Deletes a person's reference to a ticket (its object erased, or gone): with `token` (personRefToken's answer),
 * only if it is the reference read, so a mail of the person that wrote it again since keeps it (false: a later
 * erasure finds that mail by it); without, whatever it holds (a ticket no longer anywhere).
 */
export async function deletePersonRef(
  accountId: string,
  hash: string,
  ticketUuid: string,
  token?: string | null,
): Promise<boolean> {
  const { pk, sk } = personRefKeys.ticket(accountId, hash, ticketUuid);
  const condition =
    token === undefined
      ? {}
      : token === null
        ? { ConditionExpression: 'attribute_not_exists(w)' }
        : { ConditionExpression: 'w = :w', ExpressionAttributeValues: { ':w': token } };
  try {
    await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: { pk, sk }, ...condition }));
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** A rewrite of an event lost to another erasure's (its head's `erw` moved): read again. */
class EventRewriteRaced extends Error {}

/**
 * Rewrites an event in place: its JSON text (head and parts) as `rewrite` gives it, cut into parts again; a part
 * no longer needed is deleted. The head's Put holds only while its `erw` is as read (another erasure's rewrite
 * landed: read again, at most REWRITE_TRIES times); an event in parts (over PART_BYTES, rare) is rewritten in one
 * transaction, head, parts and deletes, so no reader ever sees a head with another rewrite's parts. Answers
 * whether it changed. Nothing else writes an event twice.
 */
export async function rewriteEvent(
  accountId: string,
  key: ItemKey,
  rewrite: (text: string) => string | undefined,
): Promise<boolean> {
  const seq = eventKeys.parse(key.sk).seq;
  for (let tries = 0; tries < REWRITE_TRIES; tries++) {
    const items = (await placeItems(accountId, seq)).filter((i) => i.pk === key.pk);
    const head = items[0];
    if (!head || head.type !== eventKeys.itemType.event) return false;
    const text = Buffer.concat(
      items.map((i) => Buffer.from((i.body as Uint8Array | undefined) ?? [])),
    ).toString('utf8');
    const next = rewrite(text);
    if (next === undefined || next === text) return false;
    const bytes = Buffer.from(next, 'utf8');
    const parts: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += PART_BYTES) parts.push(bytes.subarray(at, at + PART_BYTES));
    const { parts: _oldParts, ...rest } = head;
    const headPut = rewrittenPut(
      { ...rest, body: parts[0], ...(parts.length > 1 ? { parts: parts.length } : {}) },
      head,
    );
    try {
      if (parts.length === 1 && items.length === 1) {
        await dynamo.send(new PutCommand(headPut));
        return true;
      }
      await commit([
        { what: 'event', action: { Put: headPut }, refused: () => new EventRewriteRaced() },
        ...parts.slice(1).map(
          (part, i): CommitAction => ({
            what: 'event_part',
            action: {
              Put: {
                TableName: tableName(),
                Item: {
                  ...eventKeys.part(accountId, seq, i + 1),
                  pk: key.pk,
                  type: 'event_part',
                  expires_at: head.expires_at,
                  body: part,
                },
              },
            },
          }),
        ),
        ...items.slice(parts.length).map(
          (old): CommitAction => ({
            what: 'event_part',
            action: { Delete: { TableName: tableName(), Key: { pk: old.pk, sk: old.sk } } },
          }),
        ),
      ]);
      return true;
    } catch (error) {
      if (!(error instanceof EventRewriteRaced) && !isConditionFailure(error)) throw error;
    }
  }
  throw new ConcurrentWrite();
}

/** A page of a ticket's stored messages after `afterNumber` (items as stored, keys included). */
export async function messageItems(
  accountId: string,
  ticketUuid: string,
  afterNumber: number,
  limit: number,
): Promise<Record<string, unknown>[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: {
        ':pk': messageKeys.partition(accountId, ticketUuid),
        ':after': messageKeys.sort(afterNumber),
      },
      Limit: limit,
      ConsistentRead: true,
    }),
  );
  return Items ?? [];
}

/**
 * Puts an item rewritten whole: a message (written once, changed since only by the outbox, when it is a mail:
 * then on the condition that its outbox state is still what the erasure read, lib/data/outbox.ts) or a ticket's
 * acknowledgement (likewise); always on the condition that no other erasure rewrote it since it was read (its
 * `erw`). False when a condition failed: the caller reads it again (readAgain) and rewrites that.
 */
export async function putRewritten(
  item: Record<string, unknown>,
  before: Record<string, unknown>,
): Promise<boolean> {
  try {
    await dynamo.send(new PutCommand(rewrittenPut(item, before)));
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * Deletes what a keyed dimension (an address, a custom field's value) leaves once no entity is in it (counter
 * shards at 0, emptied blocks, its directory entry): the counter shards and the entry in one transaction, each on the condition that it still
 * holds what was read (a create entering the dimension meanwhile cancels it: the next pass reads again); a block
 * only if empty.
 * Answers how many items went.
 */
export async function deleteEmptyDimension(
  postingPartition: string,
  blockPartition: string,
  directoryEntry: ItemKey,
  isCounter: (sk: string) => boolean,
): Promise<number> {
  // The entry first: a write entering the dimension after this read puts it again (a new `w`), and one before
  // it left a posting, read next.
  const entry = await getItem({ ...directoryEntry });
  const postings = await partitionItems(postingPartition);
  if (postings.some((p) => !isCounter(String(p.sk)))) return 0;
  const deletes: CommitAction[] = postings.map((p) => ({
    what: 'counter',
    action: {
      Delete: {
        TableName: tableName(),
        Key: { pk: p.pk, sk: p.sk },
        ConditionExpression: 'n = :n',
        ExpressionAttributeValues: { ':n': p.n ?? 0 },
      },
    },
  }));
  if (entry) {
    deletes.push({
      what: 'directory entry',
      action: {
        Delete: {
          TableName: tableName(),
          Key: { ...directoryEntry },
          ...(entry.w === undefined
            ? { ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(w)' }
            : { ConditionExpression: 'w = :w', ExpressionAttributeValues: { ':w': entry.w } }),
        },
      },
    });
  }
  // One commit: the counters and the entry go together, or none does (a racing write cancels it; the next pass
  // reads again and finds its posting). This container's next write there puts the entry again.
  if (deletes.length) await commit(deletes);
  if (entry) forgetDirectoryEntry(directoryEntry);
  let removed = deletes.length;
  for (const block of await partitionItems(blockPartition)) {
    try {
      await dynamo.send(
        new DeleteCommand({
          TableName: tableName(),
          Key: { pk: block.pk, sk: block.sk },
          ConditionExpression: 'attribute_not_exists(k) AND attribute_not_exists(u)',
        }),
      );
      removed++;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }
  return removed;
}

/** Takes an erasure out of the due index until `atMs` (a step that failed waits before it is tried again). */
export async function postponeErasure(accountId: string, id: string, atMs: number): Promise<void> {
  const due = erasureKeys.due(accountId, id, atMs);
  await dynamo
    .send(
      new UpdateCommand({
        TableName: tableName(),
        Key: erasureKeys.record(accountId, id),
        UpdateExpression: 'SET gsi2pk = :pk, gsi2sk = :sk',
        ConditionExpression: '#s = :running',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':pk': due.gsi2pk, ':sk': due.gsi2sk, ':running': 'running' },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionFailure(error)) throw error;
    });
}

/**
 * A contact erased: deleted as a deletion deletes it (out of every list, count and search, its e-mail item
 * released), guarded by the version read, but never to the trash: nothing of it is kept to restore.
 */
export async function eraseContact(accountId: string, stored: Versioned<Contact>): Promise<void> {
  const none = { title: '', deletedMicros: 0, purgeMicros: 0, deletedAt: '', purgeAt: '' };
  const plan = contacts.planDelete(accountId, stored, none, {
    attach: [releaseEmail(accountId, stored.entity)],
  });
  await writePlan({ ...plan, fixed: plan.fixed.filter((action) => action.what !== 'trash') });
}

/** A page of the account's trash of one type (gsi1, newest deletion first): keys and the object as deleted. */
export async function trashPage(
  accountId: string,
  type: string,
  after: string | null,
  limit: number,
): Promise<{ uuid: string; sortKey: string; object: unknown }[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: trashKeys.listIndex,
      KeyConditionExpression: after === null ? 'gsi1pk = :pk' : 'gsi1pk = :pk AND gsi1sk < :after',
      ExpressionAttributeValues: {
        ':pk': trashKeys.listPartition(accountId, type),
        ...(after === null ? {} : { ':after': after }),
      },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  return (Items ?? []).map((i) => ({ uuid: String(i.uuid), sortKey: String(i.gsi1sk), object: i.object }));
}

/** Postings of an address's dimension read for its address (a failed create's orphan or two may come first). */
const ADDRESS_CANDIDATES = 3;

/**
 * The addresses the account's index lists under an erasure's hash: an address's dimension (the tickets it
 * requested, its contact) is named by that hash (lib/data/index/keyed.ts), so the first entities of its postings
 * give the address back (one Query and a GetItem or a few of the account's partitions per engine, never a Scan):
 * the replay's candidates, each to be hashed again by the caller.
 */
export async function* indexedAddresses(accountId: string, hash: string): AsyncGenerator<string> {
  const dim = dimensionName('email', hash);
  const postings = (pk: string) => sortKeysFrom(pk, orderKeys.first, ADDRESS_CANDIDATES);
  for (const orderKey of await postings(tickets.index.keys.postingPartition(accountId, dim))) {
    const address = (await tickets.getByOrderKey(accountId, orderKey))?.entity.requester.email;
    if (address) yield address;
  }
  for (const orderKey of await postings(contacts.index.keys.postingPartition(accountId, dim))) {
    const address = (await contacts.getByOrderKey(accountId, orderKey))?.entity.email;
    if (address) yield address;
  }
}

/** Puts an erasure to run again (the replay): its record running and due now, its job from the start. */
export async function restartErasure(
  accountId: string,
  record: ErasureRecord,
  progress: ErasureProgress,
  nowMs: number,
): Promise<void> {
  await commit(
    newErasureActions(accountId, record, progress, nowMs).map((a) => {
      const { ConditionExpression: _, ...put } = a.action.Put ?? { Item: {}, TableName: tableName() };
      return { ...a, action: { Put: put } };
    }),
  );
}

/**
 * The tickets and deals an erasure changed, an item each beside its record (`<id>#TOUCHED#<type>#<uuid>`: a
 * progress item holding them all would grow with the person's tickets, and every save would cost its size); the
 * completion reads them for `contact.erased` and deletes them after it.
 */
export async function markTouched(accountId: string, id: string, type: string, uuid: string): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...erasureKeys.touched(accountId, id, type, uuid),
        type: 'erasure_touched',
        object_type: type,
        uuid,
      },
    }),
  );
}

/** The next object an erasure changed after the TOUCHED item `after` (a sort key; '' from the first), or undefined. */
export async function touchedAfter(
  accountId: string,
  id: string,
  after: string,
): Promise<{ sk: string; uuid: string } | undefined> {
  const prefix = erasureKeys.touchedPrefix(id);
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: {
        ':pk': erasureKeys.partition(accountId),
        ':after': after < prefix ? prefix : after,
      },
      ProjectionExpression: 'sk, #uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  const item = Items?.[0];
  return item && String(item.sk).startsWith(prefix)
    ? { sk: String(item.sk), uuid: String(item.uuid) }
    : undefined;
}

export async function touchedObjects(
  accountId: string,
  id: string,
): Promise<Record<'ticket' | 'deal', string[]>> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: {
      ':pk': erasureKeys.partition(accountId),
      ':prefix': erasureKeys.touchedPrefix(id),
    },
    ConsistentRead: true,
  });
  const of = (type: string) => items.filter((i) => i.object_type === type).map((i) => String(i.uuid));
  return { ticket: of('ticket'), deal: of('deal') };
}

export async function forgetTouched(
  accountId: string,
  id: string,
  touched: Record<'ticket' | 'deal', string[]>,
): Promise<void> {
  await batchDeleteAll(
    Object.entries(touched).flatMap(([type, uuids]) =>
      uuids.map((uuid) => ({ ...erasureKeys.touched(accountId, id, type, uuid) })),
    ),
  );
}

/** Deletes one item by key (an orphaned index item naming the address). */
export async function deleteItem(key: ItemKey): Promise<void> {
  await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: { pk: key.pk, sk: key.sk } }));
}
