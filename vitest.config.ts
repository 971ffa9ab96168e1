import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // DynamoDB Local is started once for the whole run; every test file gets its own accounts in it.
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/require-dynamodb.ts', 'test/support/table-actions-setup.ts'],
    env: { LOG_LEVEL: 'silent', AWS_REGION: 'local' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
