import type { AccountFile } from './account-file.ts';
import { DEFAULT_PIPELINE } from './defaults.ts';
import { countNew, mergeBy, nameKey } from './natural-keys.ts';
import type { AccountConfig, Pipeline, Sequence, Stage } from './types.ts';

export type PipelineInput = NonNullable<AccountFile['pipelines']>[number];

export interface PipelineFlags {
  active: boolean;
  isDefault: boolean;
}

/** The file's pipelines; a new account whose file declares none gets the default pipeline. */
export function pipelineInputs(file: AccountFile, existing: AccountConfig | undefined): PipelineInput[] {
  return file.pipelines ?? (existing ? [] : [{ ...DEFAULT_PIPELINE, default: true, active: true }]);
}

/**
 * `active` and `isDefault` of every pipeline once the file is applied, by lower-cased name. The default is
 * the pipeline the file names; else the existing default stays; else the first active pipeline (existing
 * ones by id, then the file's new ones in its order) becomes it. Ids play no part, so the check of the
 * default rule can run on this before any id is reserved, and the merge sets exactly these flags.
 */
export function pipelineFlags(old: Pipeline[], input: PipelineInput[]): Map<string, PipelineFlags> {
  const flags = new Map(
    [...old]
      .sort((a, b) => a.id - b.id)
      .map((p) => [nameKey(p), { active: p.active, isDefault: p.isDefault }]),
  );
  for (const p of input) {
    flags.set(nameKey(p), { active: p.active ?? true, isDefault: flags.get(nameKey(p))?.isDefault ?? false });
  }
  const named = input.find((p) => p.default);
  if (named) {
    for (const [name, f] of flags) f.isDefault = name === nameKey(named);
  } else if (![...flags.values()].some((f) => f.isDefault)) {
    const first = [...flags.values()].find((f) => f.active);
    if (first) first.isDefault = true;
  }
  return flags;
}

/** How many new stages the file's pipelines have, matched by name within their pipeline. */
export function countNewStages(old: Pipeline[], input: PipelineInput[]): number {
  const byName = new Map(old.map((p) => [nameKey(p), p]));
  return input
    .map((p) => countNew(byName.get(nameKey(p))?.stages ?? [], p.stages, nameKey))
    .reduce((a, b) => a + b, 0);
}

/** Pipelines after the file: matched by name, stages by name within their pipeline, in the file's order. */
export function mergePipelines(
  old: Pipeline[],
  input: PipelineInput[],
  next: (sequence: Sequence) => number,
): Pipeline[] {
  const flags = pipelineFlags(old, input);
  const flagsOf = (p: { name: string }): PipelineFlags => {
    const found = flags.get(nameKey(p));
    if (!found) throw new Error(`No flags for pipeline ${p.name}`);
    return found;
  };
  const merged = mergeBy(old, input, nameKey, (p, prior) => {
    const oldStages = new Map(prior?.stages.map((s) => [nameKey(s), s]));
    const stages: Stage[] = p.stages.map((s, i) => ({
      id: oldStages.get(nameKey(s))?.id ?? next('stage'),
      name: s.name,
      color: s.color.toUpperCase(),
      probability: s.probability,
      position: i + 1,
    }));
    return { id: prior?.id ?? next('pipeline'), name: p.name, ...flagsOf(p), stages };
  });
  // Pipelines the file leaves out can lose the default too; new objects, never the existing ones.
  return merged.map((p) => ({ ...p, ...flagsOf(p) }));
}
