import { join } from 'node:path';
import { folderMailStore } from './folder.ts';
import { folderMailEraser } from './folder-eraser.ts';
import { s3MailStore } from './s3.ts';
import { s3MailEraser } from './s3-eraser.ts';
import type { MailEraser, MailObjectStore, MailPurger } from './types.ts';

/**
 * The variables that name the store: MAIL_BUCKET (deployed: the stack sets it on the functions that read or write
 * mail), else MAIL_DIR (`npm start` and tests set it to the folder its SMTP server keeps mail in).
 */
export const MAIL_BUCKET_VARIABLE = 'MAIL_BUCKET';
export const MAIL_DIR_VARIABLE = 'MAIL_DIR';

/** The eraser of the store the environment names (as mailStore()). */
export function mailEraser(): MailEraser {
  const bucket = process.env[MAIL_BUCKET_VARIABLE];
  const dir = process.env[MAIL_DIR_VARIABLE];
  if (bucket) return s3MailEraser(bucket);
  if (dir) return folderMailEraser(dir);
  throw new Error(`Neither ${MAIL_BUCKET_VARIABLE} nor ${MAIL_DIR_VARIABLE} is set: no mail store`);
}

/** The purger of the store the environment names; none when no store is named (no mail is kept to purge). */
export function mailPurger(): MailPurger | undefined {
  return process.env[MAIL_BUCKET_VARIABLE] || process.env[MAIL_DIR_VARIABLE] ? mailEraser() : undefined;
}

let current: { name: string; store: MailObjectStore } | undefined;

/** Whether the environment names a mail store (a process without one: an import copies no attachment). */
export const hasMailStore = (): boolean =>
  Boolean(process.env[MAIL_BUCKET_VARIABLE] || process.env[MAIL_DIR_VARIABLE]);

/** The store the environment names (one per process, made again if the environment changes, as in tests). */
export function mailStore(): MailObjectStore {
  const bucket = process.env[MAIL_BUCKET_VARIABLE];
  const dir = process.env[MAIL_DIR_VARIABLE];
  const name = bucket ? `s3:${bucket}` : dir ? `dir:${dir}` : undefined;
  if (!name)
    throw new Error(`Neither ${MAIL_BUCKET_VARIABLE} nor ${MAIL_DIR_VARIABLE} is set: no mail store`);
  if (current?.name !== name) {
    current = { name, store: bucket ? s3MailStore(bucket) : folderMailStore(join(dir as string)) };
  }
  return current.store;
}
