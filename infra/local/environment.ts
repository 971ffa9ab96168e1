import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_AUTH_CACHE_TTL_SECONDS } from '#infra/config.ts';
import { intEnv } from '#lib/config/env.ts';
import { DEFAULT_LOCAL_TABLE_NAME } from '#lib/data/store/table.ts';

/** The repository root (this file is infra/local/environment.ts). */
export const ROOT = join(import.meta.dirname, '..', '..');

/** Where the embedded store keeps its data between runs (git-ignored); DYNAMODB_DATA_DIR moves it. */
export const LOCAL_DATA_DIR = process.env.DYNAMODB_DATA_DIR || join(ROOT, '.local', 'dynamodb');

/** Where npm start keeps raw mail, attachments and its pending queue: beside the store's folder (git-ignored). */
export const LOCAL_MAIL_DIR = process.env.MAIL_DATA_DIR || join(LOCAL_DATA_DIR, '..', 'mail');

/** Where npm start keeps import uploads (ndjson files) and the imports' secrets key: beside the store's folder. */
export const LOCAL_IMPORTS_DIR = process.env.IMPORTS_DATA_DIR || join(LOCAL_DATA_DIR, '..', 'imports');

/**
 * The key import credentials are sealed with (lib/imports/credentials.ts) under npm start: IMPORT_SECRETS_KEY when
 * set, else the one in `.local/imports/secrets.key`, made (32 random bytes, base64, readable by its owner only) on
 * the first start, so a job paused across a restart still opens its credentials. Deployed, the stack's.
 */
export function ensureImportSecretsKey(newKey: () => string, dir = LOCAL_IMPORTS_DIR): void {
  if (process.env.IMPORT_SECRETS_KEY) return;
  const file = join(dir, 'secrets.key');
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, newKey(), { mode: 0o600, flag: 'wx' });
  }
  process.env.IMPORT_SECRETS_KEY = readFileSync(file, 'utf8').trim();
}

/** The local run's settings, from the environment variables README.md lists ("Environment"). */
export function localSettings() {
  const dynamoPort = intEnv('DYNAMODB_PORT', 8000);
  const ttl = intEnv('AUTH_CACHE_TTL_SECONDS', DEFAULT_AUTH_CACHE_TTL_SECONDS);
  if (ttl > 60)
    throw new Error('AUTH_CACHE_TTL_SECONDS must be at most 60 (API Gateway caps it at 3600, we at 60).');
  return {
    port: intEnv('PORT', 3000),
    /** The inbound SMTP server's port (operations.md, "E-mail locally"). */
    smtpPort: intEnv('SMTP_PORT', 2525),
    dynamoPort,
    /** Set: use that DynamoDB; unset: the embedded one on DYNAMODB_PORT. */
    externalEndpoint: process.env.DYNAMODB_ENDPOINT || undefined,
    embeddedEndpoint: `http://127.0.0.1:${dynamoPort}`,
    tableName: process.env.TABLE_NAME || DEFAULT_LOCAL_TABLE_NAME,
    authCacheTtlSeconds: ttl,
  };
}
