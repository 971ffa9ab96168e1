import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exceptionsOf } from '#infra/openapi/exceptions.ts';
import { DOCUMENT_PATH, RULESET_PATH, rulesetText } from '#infra/openapi/write.ts';

/**
 * .spectral.yaml's exceptions are generated from the declarations (docs/contract.md, "Spectral"): the checked-in
 * file is the one `npm run openapi` writes, and each of its pointers names what it covers, never a position in
 * a list (a parameter's place in its operation's list moves when another is added). That the rules still fail
 * what they are there for is test/unit/spectral.test.ts.
 */
const checkedIn = readFileSync(RULESET_PATH, 'utf8');
const document = JSON.parse(readFileSync(DOCUMENT_PATH, 'utf8'));

const pointersIn = (ruleset: string) =>
  [...ruleset.matchAll(/^ +- "docs\/openapi\.json(#[^"]*)"$/gm)].map((match) => match[1] as string);

/** The lists a pointer goes into on its way through the document, each as the path to it. */
function listsCrossed(pointer: string): string[] {
  const segments = pointer
    .slice('#/'.length)
    .split('/')
    .map((s) => decodeURIComponent(s).replaceAll('~1', '/').replaceAll('~0', '~'));
  const crossed: string[] = [];
  let node: unknown = document;
  for (const [i, segment] of segments.entries()) {
    if (Array.isArray(node)) crossed.push(segments.slice(0, i).join(' > '));
    if (typeof node !== 'object' || node === null || !(segment in node)) {
      throw new Error(`${pointer} is not in docs/openapi.json`);
    }
    node = (node as Record<string, unknown>)[segment];
  }
  return crossed;
}

describe('the Spectral ruleset (.spectral.yaml)', () => {
  it('is the one `npm run openapi` writes from the declarations (not stale)', () => {
    expect(checkedIn, '.spectral.yaml is stale: run `npm run openapi`').toBe(rulesetText());
  });

  it('names everything it excepts: no pointer goes into a list by position', () => {
    const pointers = pointersIn(checkedIn);
    expect(pointers.length).toBeGreaterThan(0);
    expect(pointers.filter((pointer) => listsCrossed(pointer).length > 0)).toEqual([]);
    // The check finds a position when there is one.
    expect(listsCrossed('#/paths/~1api~1tickets/get/parameters/0')).toEqual([
      'paths > /api/tickets > get > parameters',
    ]);
  });

  it('refuses a mark that names nothing in the document', () => {
    const withoutSearch = structuredClone(document);
    delete withoutSearch.components.parameters['listTickets.search'];
    expect(() => exceptionsOf(withoutSearch)).toThrow(
      'listTickets marks "search" as freeText, but has no such body field or query parameter',
    );
  });
});
