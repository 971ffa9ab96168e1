import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Code, tests and docs point at the docs by section name: `docs/imports.md, "Throughput"`, `data-model.md, "Keys"`,
 * `decisions.md, "Errors"`. A pointer to a section that does not exist (renamed, condensed away, never written) leads
 * a reader nowhere, so every such citation must name a heading of the cited file (`## Name`, or a heading that opens
 * with it and goes on) or a bold label (`**Name**`, `**Name.**`, `**Name:**`), words and case as written.
 * `decisions.md` and `operations.md` may also mean the spec (`spec/decisions.md`, `../shared/spec/decisions.md`),
 * which lives beside the checkout, not in this repository: where it is absent (a clean clone in CI), a citation
 * only the spec could hold is not checked.
 */
const root = join(import.meta.dirname, '..', '..');
const SCANNED = [
  'lib',
  'functions',
  'infra',
  'test',
  'bench',
  'docs',
  '.ci',
  'README.md',
  'vitest.config.ts',
];
const SKIPPED = new Set(['node_modules', 'cdk.out', join('bench', 'runs')]);
const SPEC_FILES = new Set(['decisions', 'operations']);

function files(path: string): string[] {
  if (SKIPPED.has(relative(root, path)) || SKIPPED.has(basename(path))) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((name) => files(join(path, name)));
}

/** `../shared/spec`, beside the checkout or, in a git worktree, beside the main one (`<main>/.git/worktrees/<name>`). */
function specFolder(): string | undefined {
  const candidates = [join(root, '..', 'shared', 'spec')];
  const dotGit = join(root, '.git');
  // In a worktree `.git` is a file naming the main checkout's git folder; in a checkout it is that folder.
  const worktreeGitDir =
    existsSync(dotGit) &&
    statSync(dotGit).isFile() &&
    readFileSync(dotGit, 'utf8').match(/^gitdir: (.+)$/m)?.[1];
  if (worktreeGitDir) candidates.push(join(worktreeGitDir, '..', '..', '..', '..', 'shared', 'spec'));
  return candidates.find((folder) => existsSync(folder));
}
const spec = specFolder();

/** The section names a Markdown file holds: its headings and bold labels (fenced code left out). */
const namesOf = new Map<string, { headings: string[]; labels: Set<string> }>();
function sections(path: string) {
  let names = namesOf.get(path);
  if (names) return names;
  let fenced = false;
  const prose = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => {
      if (line.startsWith('```')) fenced = !fenced;
      return !fenced && !line.startsWith('```');
    });
  const headings = prose.flatMap((line) => line.match(/^#{1,6}\s+(.+?)\s*$/)?.[1] ?? []);
  const labels = [...prose.join(' ').matchAll(/\*\*([^*]+?)[.:]?\*\*/g)].map((match) => match[1] ?? '');
  names = { headings, labels: new Set(labels) };
  namesOf.set(path, names);
  return names;
}

function holds(path: string, name: string): boolean {
  const { headings, labels } = sections(path);
  return (
    labels.has(name) ||
    headings.some((heading) => heading.startsWith(name) && !/[\p{L}\p{N}]/u.test(heading[name.length] ?? ''))
  );
}

/**
 * `docs/x.md, "A"`, also `x.md "A"`, `x.md's "A"` and `x.md: "A"`; with a colon, a quote that does not start as a
 * name does (`decisions.md: "a job paused 7 days is cancelled"`) quotes the file's words and is left alone. Only the
 * first name is read (`x.md, "A", "B"`: B may be a part of A the file names otherwise).
 */
const CITATION =
  /(?<![\w/.-])(docs\/|(?:(?:\.\.\/)?shared\/)?spec\/)?([a-z][\w-]*)\.md`?(?:'s|[,:])? "([^"]{1,160})"/g;

type Citation = { line: number; cited: string; name: string; resolved: boolean | undefined };

/** The citations in a text, comment lines joined first (leading `*`, `//`, `#` and spaces dropped): a citation
 * may wrap. `resolved` is undefined for one only the absent spec could hold. */
function citations(text: string): Citation[] {
  const starts: number[] = [];
  let joined = '';
  for (const line of text.split('\n')) {
    starts.push(joined.length);
    joined += `${line.replace(/^\s*(?:\*+|\/\/+|#+)?\s*/, '').trimEnd()} `;
  }
  const found: Citation[] = [];
  for (const match of joined.matchAll(CITATION)) {
    const [whole, prefix = '', file = '', name = ''] = match;
    if (whole.includes(':') && !/^[A-Z0-9]/.test(name)) continue;
    const inDocs = !prefix.includes('spec') && existsSync(join(root, 'docs', `${file}.md`));
    const inSpec = !prefix.startsWith('docs') && SPEC_FILES.has(file);
    if (!inDocs && !inSpec) continue;
    const places = [
      ...(inDocs ? [join(root, 'docs', `${file}.md`)] : []),
      ...(inSpec && spec ? [join(spec, `${file}.md`)] : []),
    ].filter((path) => existsSync(path));
    const line = starts.findLastIndex((start) => start <= (match.index ?? 0)) + 1;
    const cited = prefix || inSpec ? `${prefix}${file}.md` : `docs/${file}.md`;
    const resolved = places.some((path) => holds(path, name)) || (inSpec && !spec ? undefined : false);
    found.push({ line, cited, name, resolved });
  }
  return found;
}

describe('the citations of doc sections', () => {
  const all = SCANNED.map((path) => join(root, path))
    .filter((path) => existsSync(path))
    .flatMap(files)
    .flatMap((path) =>
      citations(readFileSync(path, 'utf8')).map((citation) => ({ file: relative(root, path), ...citation })),
    );

  it('finds the citations (a scanner that finds nothing passes nothing)', () => {
    // 794 when written, 564 of them held by docs/ (the rest only by the spec: checked where it is present).
    expect(all.length).toBeGreaterThan(700);
    expect(all.filter((citation) => citation.resolved).length).toBeGreaterThan(500);
    expect(citations('see docs/imports.md, "Throughput" for the figures')).toMatchObject([
      { line: 1, cited: 'docs/imports.md', name: 'Throughput', resolved: true },
    ]);
    const capacity = 'docs/capacity.md';
    expect(citations(`/**\n * Why (${capacity}, "Rules and\n * macros").\n */`)).toMatchObject([
      { line: 2, cited: 'docs/capacity.md', name: 'Rules and macros' },
    ]);
  });

  it('flags a section that does not exist', () => {
    const madeUp = ['// docs/imports.md,', '"A section nobody wrote"'].join(' ');
    expect(citations(madeUp)).toMatchObject([{ name: 'A section nobody wrote', resolved: false }]);
  });

  it('finds every cited section in the file cited', () => {
    const unresolved = all
      .filter((citation) => citation.resolved === false)
      .map(({ file, line, cited, name }) => `${file}:${line} cites ${cited} "${name}"`);
    expect(unresolved).toEqual([]);
  });
});
