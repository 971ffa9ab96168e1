import { App, Aspects, type CfnElement, NestedStack, type Stack } from 'aws-cdk-lib';
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
  /**
   * The whole stage as one template: the parent's resources and every nested stack's, each reference that crosses
   * stacks (a nested stack's parameter, the parent's read of a nested stack's output) replaced by what it names in
   * the stack that owns it, so a grant on the table reads `Fn::GetAtt [<table>, Arn]` wherever its function is. The
   * nested stacks' own AWS::CloudFormation::Stack resources are left out; the outputs are the parent's.
   */
  template: Template;
  /** Each CloudFormation stack's own template, by construct path: the parent and every nested stack. */
  stackTemplates: Record<string, TemplateJson>;
  nagFindings: string[];
}

export interface TemplateJson {
  Parameters?: Record<string, unknown>;
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
  Outputs?: Record<string, { Value: unknown }>;
  [section: string]: unknown;
}

/** What CloudFormation counts against its quotas of one template. */
export function templateFigures(json: TemplateJson) {
  return {
    resources: Object.keys(json.Resources).length,
    parameters: Object.keys(json.Parameters ?? {}).length,
    outputs: Object.keys(json.Outputs ?? {}).length,
    dynamicReferences: JSON.stringify(json).split('{{resolve:').length - 1,
  };
}

const synthesizedStages = new Map<Stage, Synthesized>();

function synthesize(stage: Stage): Synthesized {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new DeskpipeStack(app, `deskpipe-${stage}`, { stage, config: stageConfigs[stage] });
  Aspects.of(app).add(new AwsSolutionsChecks());
  const stacks = [
    stack,
    ...stack.node.findAll().filter((c): c is NestedStack => NestedStack.isNestedStack(c)),
  ];
  // A nested stack's template is a file of the assembly the parent's synthesis wrote; Template reads it.
  const own = new Map<Stack, TemplateJson>(
    stacks.map((s) => [s, Template.fromStack(s).toJSON() as TemplateJson]),
  );
  // A nested stack is no artifact of its own: its constructs' findings are the parent's.
  const findings = [
    ...Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ...Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
  ].map((f) => `${f.id}: ${String(f.entry.data).split('\n')[0]}`);
  return {
    stack,
    template: Template.fromJSON(stageTemplate(stack, own)),
    stackTemplates: Object.fromEntries(stacks.map((s) => [s.node.path, own.get(s) as TemplateJson])),
    nagFindings: findings,
  };
}

/** The stage's stacks as one template (Synthesized.template says how). */
function stageTemplate(root: Stack, own: Map<Stack, TemplateJson>): TemplateJson {
  const resolved = new Map<Stack, TemplateJson>();
  const nestedById = (parent: Stack) =>
    new Map(
      [...own.keys()]
        .filter((s) => s.nestedStackParent === parent)
        .map((s) => [parent.getLogicalId(nestedResourceOf(s)), s]),
    );
  // What a value of `stack` names: its parameters as its parent passes them, its nested stacks' outputs as they are.
  const resolveIn = (stack: Stack, value: unknown): unknown => {
    const children = nestedById(stack);
    return substitute(value, (node) => {
      const ref = node.Ref;
      if (typeof ref === 'string' && stack.nestedStackParent && own.get(stack)?.Parameters?.[ref]) {
        const parent = stack.nestedStackParent;
        const passed = own.get(parent)?.Resources[parent.getLogicalId(nestedResourceOf(stack))]?.Properties
          ?.Parameters as Record<string, unknown>;
        return resolveIn(parent, passed[ref]);
      }
      const getAtt = node['Fn::GetAtt'];
      if (Array.isArray(getAtt) && String(getAtt[1]).startsWith('Outputs.')) {
        const child = children.get(String(getAtt[0]));
        const output = String(getAtt[1]).slice('Outputs.'.length);
        if (child)
          return resolvedOf(child).Outputs?.[output]?.Value ?? missing(`${child.node.path}: ${output}`);
      }
      return undefined;
    });
  };
  const resolvedOf = (stack: Stack): TemplateJson => {
    let json = resolved.get(stack);
    if (!json) {
      json = resolveIn(stack, own.get(stack)) as TemplateJson;
      resolved.set(stack, json);
    }
    return json;
  };
  const merged: TemplateJson = { ...resolvedOf(root), Resources: {} };
  for (const stack of own.keys()) {
    const children = nestedById(stack);
    for (const [id, resource] of Object.entries(resolvedOf(stack).Resources)) {
      if (children.has(id)) continue;
      if (merged.Resources[id]) throw new Error(`${id}: a logical id of two stacks (${stack.node.path})`);
      merged.Resources[id] = resource;
    }
  }
  return merged;
}

const nestedResourceOf = (stack: Stack) => (stack as NestedStack).nestedStackResource as CfnElement;
const missing = (what: string) => {
  throw new Error(`no output ${what}`);
};

/** `value` with every object that `replace` answers for replaced by its answer, the rest walked into. */
function substitute(value: unknown, replace: (node: Record<string, unknown>) => unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => substitute(v, replace));
  if (value === null || typeof value !== 'object') return value;
  const replaced = replace(value as Record<string, unknown>);
  if (replaced !== undefined) return replaced;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, replace)]));
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
