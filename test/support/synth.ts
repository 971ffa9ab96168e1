import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import type { RouteDefinition } from '#functions/routes.ts';
import { STAGES, type Stage } from '#infra/config.ts';

/**
 * One stage's stack, synthesized with bundling skipped and checked by cdk-nag (synthesize.ts). Synthesis takes
 * seconds of CPU, so a test run synthesizes each stage once: the first test process that asks for it writes it to
 * the run's folder (TEST_SYNTH_DIR, made and removed by global-setup.ts), and every later process of the run reads
 * it from there. Within a process every test reads the same template: treat it as read-only (copy
 * `template.toJSON()` with structuredClone before altering it).
 */
export function synthStage(stage: Stage): Synthesized {
  let synthesized = synthesizedStages.get(stage);
  if (!synthesized) {
    const stored = readStored(stage) ?? storeStage(stage);
    synthesized = { ...stored, template: Template.fromJSON(stored.template) };
    synthesizedStages.set(stage, synthesized);
  }
  return synthesized;
}

interface Synthesized {
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

/** A synthesized stage as the run's folder holds it: Synthesized with the whole-stage template as JSON. */
export type StoredStage = Omit<Synthesized, 'template'> & { template: TemplateJson };

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

const runFolder = process.env.TEST_SYNTH_DIR;
const storedPath = (stage: Stage) => (runFolder ? join(runFolder, `${stage}.json`) : undefined);
const isStored = (stage: Stage) => existsSync(storedPath(stage) ?? '');

/**
 * The synthesizer, loaded only by a process that finds a stage missing from the run's folder: the stack's modules
 * and cdk-nag take seconds of CPU to load, which a process that only reads the stored stages is spared.
 */
const synthesizer = STAGES.every(isStored) ? undefined : await import('./synthesize.ts');

function readStored(stage: Stage): StoredStage | undefined {
  const path = storedPath(stage);
  return path && isStored(stage) ? (JSON.parse(readFileSync(path, 'utf8')) as StoredStage) : undefined;
}

/**
 * The stage synthesized, and written to the run's folder: to a file of this process's own first, then renamed into
 * place, so a reader never sees half a stage. Two processes that synthesize the same stage at once both write it,
 * the same JSON.
 */
function storeStage(stage: Stage): StoredStage {
  if (!synthesizer) throw new Error(`${storedPath(stage)}: the run's synthesized ${stage} stage is gone`);
  const stored = synthesizer.synthesize(stage);
  const path = storedPath(stage);
  if (path) {
    writeFileSync(`${path}.${process.pid}`, JSON.stringify(stored));
    renameSync(`${path}.${process.pid}`, path);
  }
  return stored;
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
