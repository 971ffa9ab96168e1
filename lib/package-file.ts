import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A package file a function reads at run time (the route table's `files`, node_modules-relative), read once per
 * process. Deployed, the route's files are copied beside its bundle, under their own names
 * (infra/constructs/deskpipe-function.ts); locally they are read from the package.
 */
const texts = new Map<string, string>();

export function packageFileText(file: string): string {
  let text = texts.get(file);
  if (text === undefined) {
    // Bundled, this module's url is the bundle's: the copied file is beside it.
    const beside = join(dirname(fileURLToPath(import.meta.url)), basename(file));
    const path = existsSync(beside) ? beside : createRequire(import.meta.url).resolve(file);
    text = readFileSync(path, 'utf8');
    texts.set(file, text);
  }
  return text;
}
