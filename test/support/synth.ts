import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Aspects } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { RouteDefinition } from '#functions/routes.ts';
import { type Stage, stageConfigs } from '#infra/config.ts';
import { DeskpipeStack } from '#infra/stack.ts';

/**
 * One stage's stack, synthesized with bundling skipped (the context key CDK reads for that), with its cdk-nag
 * findings. Synthesis takes seconds, so each stage is synthesized once per test process (a vitest worker runs
 * one test file in its own process) and every test of the file reads that template: treat it as read-only
 * (copy `template.toJSON()` with structuredClone before altering it).
 */
export function synthStage(stage: Stage): Synthesized {
  let synthesized = synthesizedStages.get(stage);
  if (!synthesized) {
    synthesized = synthesize(stage);
    synthesizedStages.set(stage, synthesized);
  }
  return synthesized;
}

interface Synthesized {
  stack: DeskpipeStack;
  template: Template;
  /** The nested stack of the service's alarms (infra/stack.ts). */
  alarmTemplate: Template;
  nagFindings: string[];
}

const synthesizedStages = new Map<Stage, Synthesized>();

function synthesize(stage: Stage): Synthesized {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new DeskpipeStack(app, `deskpipe-${stage}`, { stage, config: stageConfigs[stage] });
  Aspects.of(app).add(new AwsSolutionsChecks());
  const template = Template.fromStack(stack);
  // A nested stack's template is a file of the assembly the parent's synthesis wrote.
  const alarmTemplate = Template.fromJSON(
    JSON.parse(readFileSync(join(app.outdir, stack.alarmStack.templateFile), 'utf8')),
  );
  // A nested stack is no artifact of its own: its constructs' findings are the parent's.
  const findings = [
    ...Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ...Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
  ].map((f) => `${f.id}: ${String(f.entry.data).split('\n')[0]}`);
  return { stack, template, alarmTemplate, nagFindings: findings };
}

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/**
 * "METHOD /path" → auth of every API method that invokes a Lambda function, read off a synthesized template:
 * "NONE", or "TOKEN <header>" for a TOKEN authorizer of this template reading that header.
 */
export function lambdaAuthOf(template: Template): Record<string, string> {
  const resources = template.toJSON().Resources as Resources;
  const pathOf = (resourceRef: unknown): string => {
    const id = (resourceRef as { Ref?: string }).Ref;
    const resource = id ? resources[id] : undefined;
    if (resource?.Type !== 'AWS::ApiGateway::Resource') return '';
    return `${pathOf(resource.Properties.ParentId)}/${String(resource.Properties.PathPart)}`;
  };
  const authOf = (method: Record<string, unknown>): string => {
    if (method.AuthorizationType !== 'CUSTOM') return String(method.AuthorizationType);
    const id = (method.AuthorizerId as { Ref?: string } | undefined)?.Ref;
    const authorizer = id ? resources[id] : undefined;
    if (authorizer?.Type !== 'AWS::ApiGateway::Authorizer' || authorizer.Properties.Type !== 'TOKEN')
      return 'CUSTOM, not a TOKEN authorizer of this stack';
    return `TOKEN ${String(authorizer.Properties.IdentitySource).replace('method.request.header.', '')}`;
  };
  return Object.fromEntries(
    Object.values(resources)
      .filter((r) => r.Type === 'AWS::ApiGateway::Method')
      .filter((r) => (r.Properties.Integration as { Type?: string } | undefined)?.Type === 'AWS_PROXY')
      .map((r) => [
        `${String(r.Properties.HttpMethod)} ${pathOf(r.Properties.ResourceId)}`,
        authOf(r.Properties),
      ]),
  );
}

/** "METHOD /path" of every API method that invokes a Lambda function. */
export function lambdaRoutesOf(template: Template): string[] {
  return Object.keys(lambdaAuthOf(template)).sort();
}

/** What lambdaAuthOf should read for each route of the table. */
export function declaredAuthOf(table: readonly RouteDefinition[]): Record<string, string> {
  return Object.fromEntries(
    table.map((r) => [`${r.method} ${r.path}`, r.auth ? 'TOKEN Authorization' : 'NONE']),
  );
}

/** Routes of the table that the synthesized API lacks, and API routes the table lacks. */
export function routeDrift(table: readonly RouteDefinition[], deployed: string[]) {
  const declared = table.map((r) => `${r.method} ${r.path}`).sort();
  return {
    missingFromStack: declared.filter((r) => !deployed.includes(r)),
    missingFromTable: deployed.filter((r) => !declared.includes(r)),
  };
}
