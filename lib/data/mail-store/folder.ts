import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { counting } from './counting.ts';
import type { MailObjectStore } from './types.ts';

/** The folder store: `raw/<id>.eml` and `attachments/<inbound id>/<attachment id>` under `dir`. */
export function folderMailStore(dir: string): MailObjectStore {
  const root = resolve(dir);
  // A key is the store's own (never a request's text), but a path outside the folder is refused all the same.
  const pathOf = (key: string) => {
    const path = resolve(root, key);
    if (!path.startsWith(`${root}${sep}`)) throw new Error(`mail store key outside the folder: ${key}`);
    return path;
  };
  return {
    openRaw: (rawKey) => createReadStream(pathOf(rawKey)),
    async putAttachment(key, content) {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      const count = counting();
      await pipeline(content, count.stream, createWriteStream(path));
      return count.size;
    },
    async size(key) {
      try {
        return (await stat(pathOf(key))).size;
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async read(key) {
      const chunks: Buffer[] = [];
      for await (const chunk of createReadStream(pathOf(key))) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    async copy(from, to) {
      // On disk before it is named (a crash leaves no half copy under the name), as the SMTP server keeps mail.
      const path = pathOf(to);
      await mkdir(dirname(path), { recursive: true });
      await copyFile(pathOf(from), `${path}.tmp`);
      const file = await open(`${path}.tmp`, 'r+');
      try {
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(`${path}.tmp`, path);
    },
    remove: (key) => rm(pathOf(key), { force: true }),
    link: async () => undefined,
  };
}
