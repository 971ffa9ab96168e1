import { importKeys } from '../keys/imports.ts';
import { getItem } from '../store/client.ts';
import { getJob, type ImportJob } from './jobs.ts';

/** The account's one active import (the job `ACTIVE` names), or undefined: one GetItem, then the job's. */
export async function activeImport(accountId: string): Promise<ImportJob | undefined> {
  const active = await getItem(importKeys.active(accountId));
  return typeof active?.id === 'string' ? getJob(accountId, active.id) : undefined;
}
