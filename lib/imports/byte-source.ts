/**
 * An uploaded file's bytes, read by range (an ndjson import's upload: a local file, or an S3 object read with
 * `Range`): the reader asks for what it needs from where its checkpoint points, so a page costs one or a few ranged
 * reads whatever the file's size, and nothing is held between pages. lib/data/imports/ has the two stores'.
 */
export interface ByteSource {
  /** The file's length in bytes. */
  size(): Promise<number>;
  /** Up to `length` bytes from `offset` (fewer only at the file's end). */
  read(offset: number, length: number): Promise<Uint8Array>;
}
