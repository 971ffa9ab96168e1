import type { AccountConfig, Pipeline, Stage } from '#lib/accounts/types.ts';
import { ValidationFailed } from '#lib/errors.ts';
import { attribute } from '#lib/validation.ts';

/** A deal's place: a stage and its pipeline. */
export interface PipelineStage {
  pipeline: Pipeline;
  stage: Stage;
}

/** A pipeline's first stage (lowest position). */
export const firstStage = (p: Pipeline): Stage | undefined =>
  [...p.stages].sort((a, b) => a.position - b.position)[0];

const invalid = (field: string, message?: string) =>
  ValidationFailed.field(field, message ?? `The selected ${attribute(field)} is invalid.`);

/**
 * The stage `pipeline_id` and `stage_id` name (decisions.md), as a create and a PATCH take them: a stage alone →
 * its pipeline; a pipeline alone → its first stage; neither → undefined. Unknown ids, a stage of another
 * pipeline, or an inactive pipeline are a 422 on the field at fault. Ids of another account are unknown ids.
 */
export function resolveStage(
  config: AccountConfig,
  input: { pipeline_id?: number | undefined; stage_id?: number | undefined },
): PipelineStage | undefined {
  let pipeline: Pipeline | undefined;
  if (input.pipeline_id !== undefined) {
    pipeline = config.pipelines.find((p) => p.id === input.pipeline_id);
    if (!pipeline) throw invalid('pipeline_id');
    if (!pipeline.active) throw invalid('pipeline_id', 'The selected pipeline id is not active.');
  }
  if (input.stage_id !== undefined) {
    const owner = config.pipelines.find((p) => p.stages.some((s) => s.id === input.stage_id));
    if (!owner) throw invalid('stage_id');
    if (pipeline && owner.id !== pipeline.id) {
      throw invalid('stage_id', 'The selected stage id does not belong to the selected pipeline.');
    }
    if (!owner.active) throw invalid('stage_id', 'The selected stage id belongs to an inactive pipeline.');
    return { pipeline: owner, stage: owner.stages.find((s) => s.id === input.stage_id) as Stage };
  }
  if (!pipeline) return undefined;
  const stage = firstStage(pipeline);
  if (!stage) throw invalid('pipeline_id', 'The selected pipeline id has no stages.');
  return { pipeline, stage };
}

/** The default pipeline's first stage: where a deal created without pipeline_id and stage_id goes. */
export function defaultStage(config: AccountConfig): PipelineStage {
  const pipeline = config.pipelines.find((p) => p.active && p.isDefault);
  const stage = pipeline && firstStage(pipeline);
  if (!pipeline || !stage) throw invalid('pipeline_id', 'The account has no active default pipeline.');
  return { pipeline, stage };
}

/** A stage of the account by id, with its pipeline (undefined: gone from the account). */
export function stageById(config: AccountConfig, stageId: number): PipelineStage | undefined {
  for (const pipeline of config.pipelines) {
    const stage = pipeline.stages.find((s) => s.id === stageId);
    if (stage) return { pipeline, stage };
  }
  return undefined;
}
