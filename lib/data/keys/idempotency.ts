/** Key builder of idempotency records (lib/data/requests/idempotency.ts). */

export const idempotencyKeys = {
  /** An Idempotency-Key of an account (by its SHA-256: any printable key fits) and its kept answer. */
  record: (accountId: string, keyHash: string) => ({
    pk: `IDEMPOTENCY#${accountId}#${keyHash}`,
    sk: 'IDEMPOTENCY',
  }),
};
