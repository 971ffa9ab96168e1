import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  type DescribeTableCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { ensureTable, localClient } from '#infra/local/dynamodb-local.ts';
import { createTableInput, table } from '#lib/data/store/table.ts';
import { synthStage } from '#test/support/synth.ts';

/** The key schema, indexes and stream of the declaration, in one comparable shape. */
type Shape = {
  keys: string[];
  indexes: Record<string, { keys: string[]; projection: string }>;
  stream: string | undefined;
};

const declared: Shape = {
  keys: [table.partitionKey, table.sortKey],
  stream: table.stream,
  indexes: Object.fromEntries(
    Object.entries(table.indexes).map(([name, index]) => [
      name,
      { keys: [index.partitionKey, index.sortKey], projection: index.projection },
    ]),
  ),
};

type KeyElement = { AttributeName?: string; KeyType?: string };
const keyNames = (schema: KeyElement[] | undefined) =>
  [...(schema ?? [])].sort((a) => (a.KeyType === 'HASH' ? -1 : 1)).map((k) => k.AttributeName ?? '');

function shapeOf(description: {
  KeySchema?: KeyElement[];
  /** DescribeTable says StreamEnabled; CloudFormation names only the view type of a table with a stream. */
  StreamSpecification?: { StreamEnabled?: boolean; StreamViewType?: string };
  GlobalSecondaryIndexes?: {
    IndexName?: string;
    KeySchema?: KeyElement[];
    Projection?: { ProjectionType?: string };
  }[];
}): Shape {
  const stream = description.StreamSpecification;
  return {
    keys: keyNames(description.KeySchema),
    stream: stream && stream.StreamEnabled !== false ? stream.StreamViewType : undefined,
    indexes: Object.fromEntries(
      (description.GlobalSecondaryIndexes ?? []).map((i) => [
        i.IndexName ?? '',
        { keys: keyNames(i.KeySchema), projection: i.Projection?.ProjectionType ?? '' },
      ]),
    ),
  };
}

describe('one table declaration', () => {
  it('a local table kept from before the stream gets it from the bootstrap (npm start on old data)', async () => {
    const endpoint = process.env.DYNAMODB_ENDPOINT ?? '';
    const name = `deskpipe-old-${Date.now()}`;
    const client = localClient(endpoint);
    const { StreamSpecification: _, ...withoutStream } = createTableInput(name);
    await client.send(new CreateTableCommand(withoutStream));
    try {
      expect(await ensureTable(endpoint, name)).toBe('stream enabled');
      expect(await ensureTable(endpoint, name)).toBe('exists');
      const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
      expect(shapeOf(Table ?? {})).toEqual(declared);
    } finally {
      await client.send(new DeleteTableCommand({ TableName: name }));
      client.destroy();
    }
  });

  it('the table the local bootstrap builds in DynamoDB Local matches the declaration', async () => {
    const endpoint = process.env.DYNAMODB_ENDPOINT ?? '';
    const name = `deskpipe-new-${Date.now()}`;
    const client = localClient(endpoint);
    try {
      expect(await ensureTable(endpoint, name)).toBe('created');
      const { Table }: DescribeTableCommandOutput = await client.send(
        new DescribeTableCommand({ TableName: name }),
      );
      expect(shapeOf(Table ?? {})).toEqual(declared);
    } finally {
      await client.send(new DeleteTableCommand({ TableName: name }));
      client.destroy();
    }
  });

  it.each(['dev', 'prod'] as const)('the %s stack table matches the declaration', (stage) => {
    const resources = synthStage(stage).template.findResources('AWS::DynamoDB::GlobalTable');
    const [tableResource] = Object.values(resources) as { Properties: Parameters<typeof shapeOf>[0] }[];
    expect(shapeOf(tableResource?.Properties ?? {})).toEqual(declared);
  });

  describe('the comparison notices', () => {
    let stackTable: Parameters<typeof shapeOf>[0] | undefined;
    /** A copy of the dev stack's table properties, to alter. */
    const synthesized = () => {
      if (!stackTable) {
        const resources = synthStage('dev').template.findResources('AWS::DynamoDB::GlobalTable');
        const [tableResource] = Object.values(resources) as { Properties: Parameters<typeof shapeOf>[0] }[];
        if (!tableResource) throw new Error('no table in the stack');
        stackTable = tableResource.Properties;
      }
      return structuredClone(stackTable);
    };

    it('a missing index', () => {
      const description = synthesized();
      description.GlobalSecondaryIndexes = description.GlobalSecondaryIndexes?.slice(1);
      expect(shapeOf(description)).not.toEqual(declared);
    });

    it('another projection', () => {
      const description = synthesized();
      const [first] = description.GlobalSecondaryIndexes ?? [];
      if (!first) throw new Error('the table declares no index');
      first.Projection = { ProjectionType: first.Projection?.ProjectionType === 'ALL' ? 'KEYS_ONLY' : 'ALL' };
      expect(shapeOf(description)).not.toEqual(declared);
    });

    it('partition and sort keys swapped', () => {
      const description = synthesized();
      description.KeySchema = description.KeySchema?.map((k) => ({
        ...k,
        KeyType: k.KeyType === 'HASH' ? 'RANGE' : 'HASH',
      }));
      expect(shapeOf(description)).not.toEqual(declared);
    });

    it('no stream', () => {
      const description = synthesized();
      delete description.StreamSpecification;
      expect(shapeOf(description)).not.toEqual(declared);
    });

    it('another stream view', () => {
      const description = synthesized();
      description.StreamSpecification = { StreamViewType: 'KEYS_ONLY' };
      expect(shapeOf(description)).not.toEqual(declared);
    });

    it('nothing when only the order of the key elements differs', () => {
      const description = synthesized();
      description.KeySchema = description.KeySchema?.slice().reverse();
      expect(shapeOf(description)).toEqual(declared);
    });
  });
});
