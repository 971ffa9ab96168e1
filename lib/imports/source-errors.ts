/**
 * What reading a source can fail with (lib/imports/http.ts throws them; the import engine decides: pause, fail the
 * job, or an error row). No message holds the credentials.
 */

/** The source cannot be reached now (5xx, network, timeouts past the tries, 429s past the waits): pause, resume later. */
export class SourceUnavailable extends Error {
  override readonly name = 'SourceUnavailable';
  /**
   * `retryAtMs`: the source said when to ask again (a 429's Retry-After longer than the reader may wait in one run):
   * the job pauses until then (epoch ms of the clock), rather than holding a bounded run asleep.
   */
  constructor(
    message: string,
    readonly retryAtMs?: number,
  ) {
    super(message);
  }
}

/** The source refused the credentials (401/403): the job fails with this reason at once. */
export class SourceAuthFailed extends Error {
  override readonly name = 'SourceAuthFailed';
  constructor(readonly status: number) {
    super(`the source refused the credentials (HTTP ${status})`);
  }
}

/** Any other 4xx (a ticket deleted between two reads: 404): the caller makes an error row of it. */
export class SourceAnswered extends Error {
  override readonly name = 'SourceAnswered';
  constructor(
    readonly status: number,
    readonly path: string,
  ) {
    super(`the source answered HTTP ${status} for ${path}`);
  }
}

/** A URL outside the source's origin (a next page elsewhere): refused, never requested. */
export class SourceHostRefused extends Error {
  override readonly name = 'SourceHostRefused';
}
