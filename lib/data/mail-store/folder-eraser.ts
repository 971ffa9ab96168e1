import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  attachmentsPrefix,
  attachmentsPrefixOf,
  QUEUE_FOLDERS,
  queueRecordName,
  rawCopyKey,
  SENT_FOLDER,
  sentMailName,
} from './layout.ts';
import { ERASED_CONTENT, type MailEraser } from './types.ts';

/**
 * The folder store's part of an erasure and a purge (lib/erasures/job.ts and lib/data/trash/purge.ts, which call it through
 * MailEraser and MailPurger): an account's copy of a received mail (its raw file and attachments) replaced by
 * `[erased]` and its envelope's sender removed from the queue's records (`pending/`, `done/`), or all of them
 * removed; a sent mail's `.eml` file (`sent/<Message-ID>.eml`, the folder sender's name for it) replaced by
 * `[erased]`. Answers the files changed or removed.
 */
export function folderMailEraser(dir: string): MailEraser {
  /** Answers 1 when the file was replaced, 0 when it was already erased or is not there. */
  const replaceFile = async (path: string) => {
    try {
      if ((await readFile(path, 'utf8')) === ERASED_CONTENT) return 0;
      await writeFile(path, ERASED_CONTENT);
      return 1;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return 0;
    }
  };
  const filesIn = (folder: string) => readdir(join(dir, folder)).catch(() => [] as string[]);
  const records = (accountId: string, inboundId: string) =>
    QUEUE_FOLDERS.map((folder) => join(dir, folder, queueRecordName(inboundId, accountId)));
  /** Answers 1 when the file was removed, 0 when it is not there. */
  const removeFile = async (path: string) => {
    try {
      await rm(path);
      return 1;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return 0;
    }
  };
  return {
    eraseSent: (messageId) => replaceFile(join(dir, SENT_FOLDER, sentMailName(messageId))),
    eraseRaw: (rawKey) => replaceFile(join(dir, rawKey)),
    async eraseMail(accountId, inboundId, rawKey) {
      let changed = await replaceFile(join(dir, rawKey));
      const attachments = attachmentsPrefixOf(accountId, inboundId, rawKey);
      for (const name of await filesIn(attachments))
        changed += await replaceFile(join(dir, attachments, name));
      for (const path of records(accountId, inboundId)) {
        try {
          const envelope = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
          if (envelope.mailFrom === null) continue;
          await writeFile(path, JSON.stringify({ ...envelope, mailFrom: null }));
          changed++;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
      return changed;
    },
    async purgeMail(accountId, inboundId) {
      // The queue's records first: a record left without its copy would be processed again and fail on it.
      let removed = 0;
      for (const path of records(accountId, inboundId)) removed += await removeFile(path);
      const attachments = attachmentsPrefix(accountId, inboundId);
      for (const name of await filesIn(attachments))
        removed += await removeFile(join(dir, attachments, name));
      await rm(join(dir, attachments), { recursive: true, force: true });
      return removed + (await removeFile(join(dir, rawCopyKey(accountId, inboundId))));
    },
  };
}
