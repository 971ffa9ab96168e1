import { type Exception, exceptionsOf } from './exceptions.ts';

/**
 * .spectral.yaml, the ruleset `npm run lint` runs: the rules of ./spectral-rules.yaml and, as overrides, the
 * exceptions of the document (./exceptions.ts). Written whole because Spectral honours `overrides` only in the
 * ruleset it is given, not in one that ruleset extends.
 */
const RULES_FILE = 'infra/openapi/spectral-rules.yaml';

const WIDTH = 110;

/** Words wrapped into `# ` comment lines at the given indent. */
function comment(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && indent.length + 2 + line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l) => `${indent}# ${l}`);
}

function override({ kind, pointers }: Exception): string[] {
  return [
    ...comment(kind.reason, '  '),
    '  - files:',
    ...pointers.map((pointer) => `      - ${JSON.stringify(`docs/openapi.json${pointer}`)}`),
    '    rules:',
    ...kind.rules.map((rule) => `      ${rule}: off`),
  ];
}

export function spectralRulesetText(document: Parameters<typeof exceptionsOf>[0]): string {
  const header = comment(
    'Written by `npm run openapi` (infra/openapi/spectral-ruleset.ts): edit the declarations, not this file. ' +
      `The rules are in ${RULES_FILE}; each override below turns rules off where the route table, ` +
      'the answer schemas or an exception mark in infra/openapi/operations.ts or parameters.ts says they do ' +
      'not fit, each pointer naming what it covers (docs/contract.md, "Spectral").',
    '',
  );
  const overrides = exceptionsOf(document).filter(({ pointers }) => pointers.length > 0);
  return `${[
    ...header,
    'extends:',
    `  - ${JSON.stringify(`./${RULES_FILE}`)}`,
    '',
    'overrides:',
    ...overrides.flatMap((exception, i) => [...(i > 0 ? [''] : []), ...override(exception)]),
  ].join('\n')}\n`;
}
