import { type AccountFile, AccountFileInvalid, type FileProblem } from './account-file.ts';
import { DEFAULT_CATEGORIES } from './defaults.ts';
import { pipelineFlags, pipelineInputs } from './merge-pipelines.ts';
import { emailKey, nameKey, slugKey } from './natural-keys.ts';
import type { AccountConfig } from './types.ts';

/**
 * The rules of an account file that its schema cannot see: entries unique by natural key, references to
 * teams and categories (the file's or the account's), and one active default pipeline. They run before
 * anything is written, even an id reservation, so a bad file writes nothing.
 */
export function checkAccountFile(file: AccountFile, existing: AccountConfig | undefined): void {
  const problems = [...duplicates(file), ...brokenReferences(file, existing), ...fileDefaults(file)];
  // Checked last, on a file otherwise valid: duplicate names would make "the default" ambiguous.
  if (problems.length === 0) problems.push(...defaultPipelineRule(file, existing));
  if (problems.length > 0) throw new AccountFileInvalid(problems);
}

/** Duplicates inside the file would make matching by natural key (natural-keys.ts) ambiguous. */
function duplicates(file: AccountFile): FileProblem[] {
  const problems: FileProblem[] = [];
  const checkUnique = <T>(section: string, list: T[] | undefined, key: (t: T) => string, field: string) => {
    const seen = new Set<string>();
    list?.forEach((item, i) => {
      const k = key(item);
      if (seen.has(k))
        problems.push({ path: `${section}[${i}].${field}`, rule: `duplicates an earlier entry` });
      seen.add(k);
    });
  };
  checkUnique('teams', file.teams, nameKey, 'name');
  checkUnique('agents', file.agents, emailKey, 'email');
  checkUnique('categories', file.categories, slugKey, 'slug');
  checkUnique('pipelines', file.pipelines, nameKey, 'name');
  checkUnique('contacts', file.contacts, emailKey, 'email');
  file.pipelines?.forEach((p, i) => {
    checkUnique(`pipelines[${i}].stages`, p.stages, nameKey, 'name');
  });
  return problems;
}

function brokenReferences(file: AccountFile, existing: AccountConfig | undefined): FileProblem[] {
  const problems: FileProblem[] = [];
  const teamNames = new Set([...(existing?.teams ?? []), ...(file.teams ?? [])].map(nameKey));
  file.agents?.forEach((agent, i) => {
    agent.teams?.forEach((team, j) => {
      if (!teamNames.has(team.toLowerCase()))
        problems.push({ path: `agents[${i}].teams[${j}]`, rule: 'names no team' });
    });
  });
  file.categories?.forEach((category, i) => {
    if (category.default_team && !teamNames.has(category.default_team.toLowerCase())) {
      problems.push({ path: `categories[${i}].default_team`, rule: 'names no team' });
    }
  });
  const categorySlugs = new Set(
    [...DEFAULT_CATEGORIES, ...(existing?.categories ?? []), ...(file.categories ?? [])].map((c) => c.slug),
  );
  const hasCalendar =
    file.business_hours !== undefined ? file.business_hours !== null : !!existing?.account.businessHours;
  file.sla_policies?.forEach((policy, i) => {
    if (policy.category && !categorySlugs.has(policy.category)) {
      problems.push({ path: `sla_policies[${i}].category`, rule: 'names no category' });
    }
    if (
      policy.first_reply_minutes === undefined &&
      policy.next_reply_minutes === undefined &&
      policy.resolution_minutes === undefined
    ) {
      problems.push({
        path: `sla_policies[${i}]`,
        rule: 'needs at least one of first_reply_minutes, next_reply_minutes, resolution_minutes',
      });
    }
    if (policy.business_hours && !hasCalendar) {
      problems.push({
        path: `sla_policies[${i}].business_hours`,
        rule: 'needs the account to have business_hours',
      });
    }
  });
  return problems;
}

/** The file can name one default pipeline, and only an active one. */
function fileDefaults(file: AccountFile): FileProblem[] {
  const problems: FileProblem[] = [];
  const defaults = (file.pipelines ?? []).flatMap((p, i) => (p.default ? [i] : []));
  if (defaults.length > 1) {
    problems.push({
      path: `pipelines[${defaults[1]}].default`,
      rule: 'only one pipeline can be the default',
    });
  }
  for (const i of defaults) {
    if (file.pipelines?.[i]?.active === false) {
      problems.push({ path: `pipelines[${i}].active`, rule: 'the default pipeline must be active' });
    }
  }
  return problems;
}

/** Exactly one active pipeline must be the default once the file is applied, with the flags the merge sets. */
function defaultPipelineRule(file: AccountFile, existing: AccountConfig | undefined): FileProblem[] {
  const flags = pipelineFlags(existing?.pipelines ?? [], pipelineInputs(file, existing));
  const activeDefaults = [...flags.values()].filter((f) => f.active && f.isDefault).length;
  return activeDefaults === 1
    ? []
    : [{ path: 'pipelines', rule: 'exactly one active pipeline must be the default' }];
}
