/** Tests of behaviour run against DynamoDB Local, never a mock: refuse to run without it. */
if (!process.env.DYNAMODB_ENDPOINT || !process.env.TABLE_NAME) {
  throw new Error(
    'DYNAMODB_ENDPOINT and TABLE_NAME must point at DynamoDB Local (set by test/support/global-setup.ts).',
  );
}
