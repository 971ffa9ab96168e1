import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '#infra/local/environment.ts';
import { openApiDocument } from './document.ts';
import { spectralRulesetText } from './spectral-ruleset.ts';

/**
 * `npm run openapi`: writes docs/openapi.json from the route table and the schemas, and .spectral.yaml, the
 * lint's ruleset with the exceptions those declare. Both are checked in (GET /api/openapi.json serves the
 * document; test/unit/openapi.test.ts and test/unit/spectral-ruleset.test.ts fail when either differs from
 * what this writes).
 */
export const DOCUMENT_PATH = join(ROOT, 'docs', 'openapi.json');
export const RULESET_PATH = join(ROOT, '.spectral.yaml');

function document() {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  return openApiDocument(version);
}

export function documentText(): string {
  return `${JSON.stringify(document(), null, 2)}\n`;
}

export function rulesetText(): string {
  return spectralRulesetText(document());
}

if (import.meta.main) {
  writeFileSync(DOCUMENT_PATH, documentText());
  console.log(`wrote ${DOCUMENT_PATH}`);
  writeFileSync(RULESET_PATH, rulesetText());
  console.log(`wrote ${RULESET_PATH}`);
}
