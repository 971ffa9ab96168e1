import { basename, extname } from 'node:path';
import { route } from '#functions/routes.ts';
import { publicHandler } from '#lib/http/public-handler.ts';
import { packageFileText } from '#lib/package-file.ts';

const served = route('docsAsset');

/** The files of the docs page (the route's `files`, from swagger-ui-dist), by the name in the path. */
const ASSETS = new Map((served.files ?? []).map((file) => [basename(file), file]));
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** GET /docs/{asset}: the docs page's script and style sheet; any other name is a 404. */
export const handler = publicHandler({ route: served }, ({ params }) => {
  const name = params.asset ?? '';
  const file = ASSETS.get(name);
  if (!file) return undefined;
  return {
    statusCode: 200,
    contentType: TYPES[extname(name)] ?? 'application/octet-stream',
    body: packageFileText(file),
    headers: { 'Cache-Control': 'public, max-age=86400' },
  };
});
