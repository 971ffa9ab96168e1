import { App } from 'aws-cdk-lib';
import { isStage, STAGES, stageConfigs } from './config.ts';
import { DeskpipeStack } from './stack.ts';

/** `npx cdk synth|deploy -c stage=<dev|prod>`; dev when no stage is given. */
const app = new App();
const stage: unknown = app.node.tryGetContext('stage') ?? 'dev';
if (!isStage(stage)) {
  throw new Error(`Unknown stage "${String(stage)}": use -c stage=<${STAGES.join('|')}>`);
}
new DeskpipeStack(app, `deskpipe-${stage}`, {
  stage,
  config: stageConfigs[stage],
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
