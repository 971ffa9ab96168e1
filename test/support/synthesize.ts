import { App, Aspects, type CfnElement, NestedStack, type Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { type Stage, stageConfigs } from '#infra/config.ts';
import { DeskpipeStack } from '#infra/stack.ts';
import type { StoredStage, TemplateJson } from './synth.ts';

/**
 * One stage's stack synthesized with bundling skipped (the context key CDK reads for that), as synth.ts keeps it:
 * the whole stage as one template, each stack's own, and the cdk-nag findings. synth.ts loads this module only in a
 * process that has a stage to synthesize (loading the stack's modules and cdk-nag alone takes seconds).
 */
export function synthesize(stage: Stage): StoredStage {
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
    template: stageTemplate(stack, own),
    stackTemplates: Object.fromEntries(stacks.map((s) => [s.node.path, own.get(s) as TemplateJson])),
    nagFindings: findings,
  };
}

/** The stage's stacks as one template (Synthesized.template in synth.ts says how). */
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
