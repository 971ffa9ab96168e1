import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Stage, StageConfig } from '../config.ts';
import type { DeskpipeFunctionProps } from '../constructs/deskpipe-function.ts';

/**
 * What every nested stack of a stage builds on: the stage and its config, the parent's table and alarm topic, and
 * every function's defaults. A nested stack reads the table and the topic across the stack border: CDK passes each
 * attribute it uses as a parameter of the nested stack (infra/stack.ts).
 */
export interface StageParts {
  stage: Stage;
  config: StageConfig;
  /** `deskpipe-<stage>`: the prefix of every name. */
  namePrefix: string;
  functionDefaults: Pick<DeskpipeFunctionProps, 'projectRoot' | 'namePrefix' | 'memorySize' | 'logRetention'>;
  table: TableV2;
  topic: ITopic | undefined;
}

/** The props a ScheduledRunner (and the outbox, the mail receiving) shares with every other. */
export function runnerDefaults(parts: StageParts) {
  return { ...parts.functionDefaults, table: parts.table, topic: parts.topic };
}
