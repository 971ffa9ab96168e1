import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { route } from '#functions/routes.ts';
import { publicHandler } from '#lib/http/public-handler.ts';

const served = route('docsAsset');

/** The files of the docs page (the route's `files`, from swagger-ui-dist), by the name in the path. */
const ASSETS = new Map((served.files ?? []).map((file) => [basename(file), file]));
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * Deployed, the route's files are copied beside its bundle (the route table's `files`); locally they are read
 * from the package. Each is read once per process.
 */
const texts = new Map<string, string>();
function text(name: string, file: string): string {
  let body = texts.get(name);
  if (body === undefined) {
    const beside = join(dirname(fileURLToPath(import.meta.url)), name);
    const path = existsSync(beside) ? beside : createRequire(import.meta.url).resolve(file);
    body = readFileSync(path, 'utf8');
    texts.set(name, body);
  }
  return body;
}

/** GET /docs/{asset}: the docs page's script and style sheet; any other name is a 404. */
export const handler = publicHandler({ route: served }, ({ params }) => {
  const name = params.asset ?? '';
  const file = ASSETS.get(name);
  if (!file) return undefined;
  return {
    statusCode: 200,
    contentType: TYPES[extname(name)] ?? 'application/octet-stream',
    body: text(name, file),
    headers: { 'Cache-Control': 'public, max-age=86400' },
  };
});
