import { defineConfig } from 'vitest/config';

/**
 * Three tiers (docs/testing.md says which test goes where): `npm run test:unit`, `test:api`, `test:system`;
 * `npm test` runs them all. What every tier shares is set here once.
 */
const storeTier = {
  // DynamoDB Local is started once for the run (shared by both tiers); every test file gets its own accounts.
  globalSetup: ['test/support/global-setup.ts'],
  setupFiles: ['test/support/require-dynamodb.ts', 'test/support/table-actions-setup.ts'],
};

export default defineConfig({
  test: {
    env: { LOG_LEVEL: 'silent', AWS_REGION: 'local' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // No store: the data layer's client points nowhere, and any call it makes fails the test saying so.
          env: { DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', TABLE_NAME: 'no-store-in-the-unit-tier' },
          setupFiles: ['test/support/no-store.ts'],
        },
      },
      { extends: true, test: { name: 'api', include: ['test/api/**/*.test.ts'], ...storeTier } },
      { extends: true, test: { name: 'system', include: ['test/system/**/*.test.ts'], ...storeTier } },
    ],
  },
});
