import type { Readable } from 'node:stream';

/** What a mail store answers (lib/data/mail-store.ts says where each is kept), and what its erasure and purge do. */

export interface MailObjectStore {
  /** The raw mail kept under `rawKey`, as a stream (a missing key: the stream errors). */
  openRaw(rawKey: string): Readable;
  /** Keeps an attachment's bytes (streamed, never whole in memory) under `key`; answers its size in bytes. */
  putAttachment(key: string, content: Readable): Promise<number>;
  /** The object's size in bytes, or undefined when nothing is kept under `key` (never kept, or expired). */
  size(key: string): Promise<number | undefined>;
  /** The whole object (callers check its size first). */
  read(key: string): Promise<Buffer>;
  /** Keeps a copy of the object `from` under `to`, durably (S3: CopyObject, server-side); throws if `from` is missing. */
  copy(from: string, to: string): Promise<void>;
  /** Removes the object under `key` (nothing there: nothing to do). */
  remove(key: string): Promise<void>;
  /**
   * A short-lived URL that serves the object itself with this file name and type, for objects too large for a
   * function's answer; undefined when the store has no such URL (the folder: the local gateway has no such limit).
   */
  link(key: string, as: { filename: string; contentType: string }): Promise<string | undefined>;
}

/** The erasure's mark: what a file of the person's becomes (lib/erasures/redact.ts, ERASED, is the same text). */
export const ERASED_CONTENT = '[erased]';

/** Where an account's copies of received mail are kept, as the purge of their ticket reaches them (lib/data/trash/purge.ts). */
export interface MailPurger {
  /**
   * Removes the account's copy of one received mail: its raw mail, its attachments and (the folder) the local
   * queue's records of it, which keep its envelope; answers the files removed. Another account's copy of the same
   * delivery is never touched.
   */
  purgeMail(accountId: string, inboundId: string): Promise<number>;
}

/** Where a person's raw mail and attachments are kept, as the erasure reaches them (lib/erasures/job.ts). */
export interface MailEraser extends MailPurger {
  /**
   * Replaces the account's raw mail (`rawKey`, as its inbound entry recorded it) and attachments of one received mail
   * with `[erased]`, and (the folder) removes its envelope's sender from the queue's records; answers the files changed.
   */
  eraseMail(accountId: string, inboundId: string, rawKey: string): Promise<number>;
  /**
   * Replaces only the raw mail of one received mail with `[erased]` (a mail the person was sent or copied: its
   * headers name them; its attachments are its sender's); answers the files changed (1 or 0).
   */
  eraseRaw(rawKey: string): Promise<number>;
  /** Replaces the kept copy of one mail the service sent (by its Message-ID) with `[erased]`; answers 1 or 0. */
  eraseSent(messageId: string): Promise<number>;
}
