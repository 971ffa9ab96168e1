import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

/**
 * The one declaration of the table: key schema and every index. The CDK stack, the local bootstrap and
 * the tests all build the table from this, so they cannot drift apart. See docs/data-model.md.
 */
export interface IndexDeclaration {
  readonly partitionKey: string;
  readonly sortKey: string;
  readonly projection: 'ALL' | 'KEYS_ONLY';
}

export const table = {
  partitionKey: 'pk',
  sortKey: 'sk',
  /** Epoch seconds; DynamoDB deletes an item some time after this passes. */
  ttlAttribute: 'expires_at',
  /**
   * The table's stream: every write's new item, read by the webhook fan-out (docs/webhooks.md): the deployed
   * stack's event source mapping, and `npm start`'s stream reader on DynamoDB Local.
   */
  stream: 'NEW_IMAGE',
  indexes: {
    /** Overloaded lookup index: API key by id, and later entity lookups that are not by primary key. */
    gsi1: { partitionKey: 'gsi1pk', sortKey: 'gsi1sk', projection: 'ALL' },
    /**
     * Sparse, keys only: the webhook due index (docs/webhooks.md), one small entry per endpoint with work due. Keys
     * only, so an entry is ~150 bytes (1 write unit) whatever the endpoint item holds, only a write that moves the
     * entry writes the index (a write of the endpoint's other attributes does not), and no endpoint's URL or secrets
     * are copied into an index.
     */
    gsi2: { partitionKey: 'gsi2pk', sortKey: 'gsi2sk', projection: 'KEYS_ONLY' },
  } satisfies Record<string, IndexDeclaration>,
} as const;

export type IndexName = keyof typeof table.indexes;

export const DEFAULT_LOCAL_TABLE_NAME = 'deskpipe-local';

/** CreateTable input for DynamoDB Local (and for tests), derived from the declaration above. */
export function createTableInput(tableName: string): CreateTableCommandInput {
  const indexes = Object.entries(table.indexes) as [string, IndexDeclaration][];
  const attributes = new Set<string>([table.partitionKey, table.sortKey]);
  for (const [, index] of indexes) {
    attributes.add(index.partitionKey);
    attributes.add(index.sortKey);
  }
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attributes].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    KeySchema: [
      { AttributeName: table.partitionKey, KeyType: 'HASH' },
      { AttributeName: table.sortKey, KeyType: 'RANGE' },
    ],
    StreamSpecification: streamSpecification,
    GlobalSecondaryIndexes: indexes.map(([name, index]) => ({
      IndexName: name,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' },
        { AttributeName: index.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: index.projection },
    })),
  };
}

/** The stream as CreateTable and UpdateTable take it. */
export const streamSpecification = { StreamEnabled: true, StreamViewType: table.stream } as const;
