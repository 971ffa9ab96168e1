import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '#infra/local/environment.ts';
import { DOCUMENT_PATH } from '#infra/openapi/write.ts';

/**
 * `npm run lint` runs Spectral over docs/openapi.json with .spectral.yaml (docs/contract.md, "Spectral"), which
 * turns rules off by JSON pointer. This proves the ruleset still fails what it is there for: the document is
 * linted as if it were docs/openapi.json (so the overrides apply), with one fault of each kind put in.
 */
interface Finding {
  code: string;
  path: string[];
}

/**
 * Spectral over the document as docs/openapi.json, from files (its stdin read flaked under load: an empty
 * answer): the ruleset and the rules it extends copied into a folder of the project's own (node_modules/.cache,
 * so the OWASP ruleset resolves as from the root), the document written there at docs/openapi.json.
 */
function lint(document: unknown): Finding[] {
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'spectral-test-'));
  try {
    for (const file of ['.spectral.yaml', 'infra/openapi/spectral-rules.yaml']) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      copyFileSync(join(ROOT, file), join(dir, file));
    }
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'openapi.json'), JSON.stringify(document));
    const run = spawnSync(
      join(ROOT, 'node_modules', '.bin', 'spectral'),
      ['lint', 'docs/openapi.json', '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet'],
      { cwd: dir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    try {
      return (JSON.parse(run.stdout) as Finding[]).map(({ code, path }) => ({ code, path }));
    } catch {
      throw new Error(
        `spectral exited ${run.status} (${run.signal ?? run.error ?? 'no signal'}): ${run.stderr}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const sorted = (findings: Finding[]) => findings.map((f) => JSON.stringify(f)).sort();

describe('the Spectral ruleset (.spectral.yaml)', () => {
  it('fails request limits, a write without a key and a counted answer without its rate-limit headers, and nothing else', () => {
    const document = JSON.parse(readFileSync(DOCUMENT_PATH, 'utf8'));
    const { schemas } = document.components;
    schemas.CreateTicketRequest.properties.subject = { type: 'string' };
    schemas.UpdateTicketRequest.properties.team_id.anyOf[0] = { type: 'integer', minimum: 1 };
    schemas.CreateDealRequest.properties.notes = { type: 'string', maxLength: 100 };
    document.paths['/api/deals'].post.security = [];
    delete document.paths['/api/tickets'].post.responses['201'].headers.RateLimit;

    const property = (schema: string, ...rest: string[]) => [
      'components',
      'schemas',
      schema,
      'properties',
      ...rest,
    ];
    expect(sorted(lint(document))).toEqual(
      sorted([
        { code: 'owasp:api4:2023-string-limit', path: property('CreateTicketRequest', 'subject') },
        {
          code: 'owasp:api4:2023-integer-format',
          path: property('UpdateTicketRequest', 'team_id', 'anyOf', '0'),
        },
        {
          code: 'owasp:api4:2023-integer-limit',
          path: property('UpdateTicketRequest', 'team_id', 'anyOf', '0'),
        },
        { code: 'owasp:api4:2023-string-restricted', path: property('CreateDealRequest', 'notes') },
        { code: 'owasp:api2:2023-write-restricted', path: ['paths', '/api/deals', 'post', 'security'] },
        {
          code: 'deskpipe-rate-limit-headers',
          path: ['paths', '/api/tickets', 'post', 'responses', '201', 'headers'],
        },
      ]),
    );
  });
});
