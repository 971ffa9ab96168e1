import type { Pipeline } from '#lib/accounts/types.ts';
import { listPipelineItems } from '#lib/data/accounts/accounts.ts';

/** A pipeline as the API shows it. */
export function presentPipeline(pipeline: Pipeline) {
  return {
    id: pipeline.id,
    name: pipeline.name,
    is_default: pipeline.isDefault,
    stages: [...pipeline.stages]
      .sort((a, b) => a.position - b.position)
      .map((s) => ({
        id: s.id,
        name: s.name,
        color: s.color,
        probability: s.probability,
        position: s.position,
      })),
  };
}

/** Active pipelines of the account, by id, each with its stages by position. One Query. */
export async function listActivePipelines(accountId: string) {
  const pipelines = await listPipelineItems(accountId);
  return pipelines.filter((p) => p.active).map(presentPipeline);
}
