import { open, stat } from 'node:fs/promises';
import type { ByteSource } from '#lib/imports/byte-source.ts';

/**
 * A local file read by range (`admin import --file`, and the upload in the local object store under `npm start`):
 * each read opens the file, reads what it asked for at its offset and closes it, so a reader keeps no handle between
 * pages (a job paused for days holds nothing open).
 */
export function fileBytes(path: string): ByteSource {
  return {
    size: async () => (await stat(path)).size,
    async read(offset, length) {
      const file = await open(path, 'r');
      try {
        const buffer = Buffer.alloc(length);
        let filled = 0;
        while (filled < length) {
          const { bytesRead } = await file.read(buffer, filled, length - filled, offset + filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        return buffer.subarray(0, filled);
      } finally {
        await file.close();
      }
    },
  };
}
