import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  claimSourceKey,
  findPendingMembers,
  findSourceKeys,
  pendingMember,
  SourceKeyMoved,
  type SourceKeyRef,
  touchSourceKey,
  UNDONE_TYPES,
} from '#lib/data/imports/source-keys.ts';
import { importKeys } from '#lib/data/keys.ts';
import { queryAll, scanAll, tableName } from '#lib/data/store/client.ts';
import { commit } from '#lib/data/store/transact.ts';
import { UNDO_ORDER } from '#lib/imports/undo.ts';

/**
 * Source keys (issue 42): an imported object found again by `(source, type, source id)`, claimed once (two racing
 * claims: one wins, the other is told what is held), its digest moved only from the digest read, the source id never
 * in a key.
 */
const ref = (sourceId: string, type: SourceKeyRef['type'] = 'contacts'): SourceKeyRef => ({
  source: 'ndjson',
  type,
  sourceId,
});

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
}

describe('source keys', () => {
  it('claimed once, found by source id, digest moved from the digest read only', async () => {
    const acc = randomUUID();
    const sourceId = 'jane.doe@example.com';
    expect((await findSourceKeys(acc, 'ndjson', 'contacts', [sourceId])).size).toBe(0);

    await commit([
      claimSourceKey(acc, ref(sourceId), {
        objectId: 'c-1',
        importId: 'imp_1',
        digest: 'd1',
        matched: false,
      }),
    ]);
    const found = await findSourceKeys(acc, 'ndjson', 'contacts', [sourceId, 'other', sourceId]);
    expect([...found]).toEqual([
      [sourceId, { objectId: 'c-1', importId: 'imp_1', digest: 'd1', matched: false }],
    ]);
    // Another type, source or account is another key.
    expect((await findSourceKeys(acc, 'ndjson', 'agents', [sourceId])).size).toBe(0);
    expect((await findSourceKeys(acc, 'zendesk', 'contacts', [sourceId])).size).toBe(0);
    expect((await findSourceKeys(randomUUID(), 'ndjson', 'contacts', [sourceId])).size).toBe(0);

    const again = await refusal(
      commit([
        claimSourceKey(acc, ref(sourceId), {
          objectId: 'c-2',
          importId: 'imp_2',
          digest: 'd9',
          matched: false,
        }),
      ]),
    );
    expect(again).toBeInstanceOf(SourceKeyMoved);
    expect((again as SourceKeyMoved).held).toEqual({
      objectId: 'c-1',
      importId: 'imp_1',
      digest: 'd1',
      matched: false,
    });

    await commit([touchSourceKey(acc, ref(sourceId), 'd1', 'd2')]);
    const stale = await refusal(commit([touchSourceKey(acc, ref(sourceId), 'd1', 'd3')]));
    expect(stale).toBeInstanceOf(SourceKeyMoved);
    expect((stale as SourceKeyMoved).held?.digest).toBe('d2');
    expect((await findSourceKeys(acc, 'ndjson', 'contacts', [sourceId])).get(sourceId)).toEqual({
      objectId: 'c-1',
      importId: 'imp_1',
      digest: 'd2',
      matched: false,
    });
    // A matched key (an object found by e-mail) is not among what the import created.
    await commit([
      claimSourceKey(acc, ref('a-9', 'agents'), {
        objectId: 9,
        importId: 'imp_1',
        digest: 'd',
        matched: true,
      }),
    ]);
    expect((await findSourceKeys(acc, 'ndjson', 'agents', ['a-9'])).get('a-9')?.matched).toBe(true);
    // Nor is a message: undo trashes its ticket, or leaves it where the import only updated the ticket.
    await commit([
      claimSourceKey(acc, ref('m-1', 'messages'), {
        objectId: 'msg-1',
        importId: 'imp_1',
        digest: 'd',
        matched: false,
      }),
    ]);
    expect((await findSourceKeys(acc, 'ndjson', 'messages', ['m-1'])).get('m-1')?.objectId).toBe('msg-1');

    // The source id (here an address) is in no attribute of the table; the import's created keys are listed.
    const items = await scanAll({ TableName: tableName() });
    expect(JSON.stringify(items)).not.toContain('jane.doe');
    const created = await queryAll({
      TableName: tableName(),
      IndexName: importKeys.createdByIndex,
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': importKeys.createdByPartition(acc, 'imp_1') },
    });
    expect(created.map((i) => [i.sourceType, i.objectId])).toEqual([['contacts', 'c-1']]);
    // What gets an entry is what undo walks.
    expect(new Set(UNDO_ORDER)).toEqual(UNDONE_TYPES);
  });

  it("a team's pending members: added and taken in agents' commits, read by team source id", async () => {
    const acc = randomUUID();
    const team = ref('g-1', 'teams');
    await commit([pendingMember(acc, team, 3, 'ADD')]);
    await commit([pendingMember(acc, team, 1, 'ADD'), pendingMember(acc, ref('g-2', 'teams'), 1, 'ADD')]);
    await commit([pendingMember(acc, team, 3, 'DELETE')]);
    const members = await findPendingMembers(acc, 'ndjson', ['g-1', 'g-2', 'g-3']);
    expect([...members].sort()).toEqual(
      [
        ['g-1', [1]],
        ['g-2', [1]],
      ].sort(),
    );
  });

  it('two runs racing to claim one key: exactly one commits', async () => {
    const acc = randomUUID();
    const tries = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        commit([
          claimSourceKey(acc, ref('42', 'agents'), {
            objectId: i,
            importId: `imp_${i}`,
            digest: 'd',
            matched: false,
          }),
        ]),
      ),
    );
    expect(tries.filter((t) => t.status === 'fulfilled')).toHaveLength(1);
    const winner = tries.findIndex((t) => t.status === 'fulfilled');
    expect((await findSourceKeys(acc, 'ndjson', 'agents', ['42'])).get('42')?.objectId).toBe(winner);
  });
});
