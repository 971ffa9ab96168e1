import { join } from 'node:path';
import { ensureTable, isReachable, startDynamoDbLocal } from '#infra/local/dynamodb-local.ts';
import {
  ensureImportSecretsKey,
  LOCAL_DATA_DIR,
  LOCAL_IMPORTS_DIR,
  localSettings,
} from '#infra/local/environment.ts';
import { newSecretsKey } from '#lib/imports/credentials.ts';

/**
 * `npm run --silent admin -- <command>`. Talks to the same store as `npm start` (same variables); when that
 * store is not running, it starts the embedded one on the same data folder for the length of the command.
 * It reaches a deployed table only with --aws (and TABLE_NAME).
 */
async function main(args: string[]): Promise<number> {
  let stopStore: (() => Promise<void>) | undefined;
  if (args.includes('--aws')) {
    if (!process.env.TABLE_NAME)
      throw new Error('--aws needs TABLE_NAME: the deployed table (a stack output).');
    delete process.env.DYNAMODB_ENDPOINT;
  } else {
    const settings = localSettings();
    let endpoint = settings.externalEndpoint ?? settings.embeddedEndpoint;
    if (!settings.externalEndpoint && !(await isReachable(endpoint))) {
      const store = await startDynamoDbLocal({ port: 0, dbPath: LOCAL_DATA_DIR });
      endpoint = store.endpoint;
      stopStore = () => store.stop();
    }
    await ensureTable(endpoint, settings.tableName);
    process.env.DYNAMODB_ENDPOINT = endpoint;
    process.env.TABLE_NAME = settings.tableName;
    // `import` seals credentials with npm start's key and puts files where its runner reads them (.local/imports).
    ensureImportSecretsKey(newSecretsKey);
    process.env.IMPORT_UPLOAD_DIR ??= join(LOCAL_IMPORTS_DIR, 'uploads');
  }
  // Imported after the environment is settled: the data layer's client reads it when loaded.
  const { runCommand, CommandError } = await import('./commands.ts');
  try {
    const output = await runCommand(args);
    process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof CommandError) {
      process.stderr.write(`${error.message}\n`);
      return error.exitCode;
    }
    throw error;
  } finally {
    await stopStore?.();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
