import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '#infra/local/environment.ts';
import { openApiDocument } from './document.ts';

/**
 * `npm run openapi`: writes docs/openapi.json from the route table and the schemas. The file is checked in
 * (GET /api/openapi.json serves it; test/openapi.test.ts fails when it differs from what this writes).
 */
export const DOCUMENT_PATH = join(ROOT, 'docs', 'openapi.json');

export function documentText(): string {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  return `${JSON.stringify(openApiDocument(version), null, 2)}\n`;
}

if (import.meta.main) {
  writeFileSync(DOCUMENT_PATH, documentText());
  console.log(`wrote ${DOCUMENT_PATH}`);
}
