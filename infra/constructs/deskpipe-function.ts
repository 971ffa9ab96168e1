import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { TableAction } from '#functions/routes.ts';
import { FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';

/**
 * Every function's defaults in one place: Node 24 on arm64, one ESM bundle with the AWS SDK inside
 * (no runtime SDK resolution on cold start), minified with source maps, JSON logs to an explicit log group,
 * EMF counts in the stage's own metric namespace.
 */
export interface DeskpipeFunctionProps {
  /** Entry file, absolute. */
  entry: string;
  /** Stage-qualified prefix of the function and log group names (`deskpipe-prod`). */
  namePrefix: string;
  /** Repository root: where package-lock.json and tsconfig.json live. */
  projectRoot: string;
  memorySize: number;
  logRetention: RetentionDays;
  /** Package files (node_modules-relative) the function reads at run time: copied beside its bundle. */
  files?: readonly string[];
  /** How long it may run; FUNCTION_TIMEOUT_MS (an API request's limit) unless it is a background worker. */
  timeout?: Duration;
  /** Reserved concurrency (background workers: infra/config.ts `workerConcurrency`); none for API routes. */
  reservedConcurrentExecutions?: number;
}

/** esbuild settings shared by the stack and the cold-start benchmark. */
export const BUNDLING = {
  format: OutputFormat.ESM,
  target: 'node24',
  minify: true,
  sourceMap: true,
  mainFields: ['module', 'main'],
  externalModules: [] as string[],
  // Some bundled CommonJS code calls require(); ESM has none unless we make one.
  banner: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  /** Lambda's credentials come from its environment only (infra/bundling/env-credentials.ts says why). */
  alias: { '@aws-sdk/credential-provider-node': './infra/bundling/env-credentials.ts' },
};

export class DeskpipeFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: DeskpipeFunctionProps) {
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      logGroupName: `/aws/lambda/${props.namePrefix}-${id}`,
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    super(scope, id, {
      functionName: `${props.namePrefix}-${id}`,
      entry: props.entry,
      handler: 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: `${props.projectRoot}/package-lock.json`,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout ?? Duration.millis(FUNCTION_TIMEOUT_MS),
      ...(props.reservedConcurrentExecutions !== undefined
        ? { reservedConcurrentExecutions: props.reservedConcurrentExecutions }
        : {}),
      tracing: Tracing.ACTIVE,
      loggingFormat: LoggingFormat.JSON,
      logGroup,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        // The EMF counts of lib/http/metrics.ts: one namespace per stage, so dev never mixes with prod.
        POWERTOOLS_METRICS_NAMESPACE: props.namePrefix,
      },
      bundling: {
        format: BUNDLING.format,
        target: BUNDLING.target,
        minify: BUNDLING.minify,
        sourceMap: BUNDLING.sourceMap,
        mainFields: BUNDLING.mainFields,
        externalModules: BUNDLING.externalModules,
        banner: BUNDLING.banner,
        esbuildArgs: { '--alias': Object.entries(BUNDLING.alias).map(([from, to]) => `${from}=${to}`) },
        tsconfig: `${props.projectRoot}/tsconfig.json`,
        ...(props.files?.length ? { commandHooks: copyBesideBundle(props.files) } : {}),
      },
    });
  }

  /**
   * Sets TABLE_NAME and allows exactly the DynamoDB actions the function uses, on this table only, together,
   * so neither is forgotten. An index is granted apart (bindIndexQueries), to the one function that queries one.
   */
  bindTable(table: ITableV2, actions: readonly TableAction[]): this {
    this.addEnvironment('TABLE_NAME', table.tableName);
    this.addToRolePolicy(
      new PolicyStatement({ actions: actions.map((a) => `dynamodb:${a}`), resources: [table.tableArn] }),
    );
    return this;
  }

  /** Allows Query on these indexes of the table, and nothing else on them. */
  bindIndexQueries(table: ITableV2, indexes: readonly string[]): this {
    if (indexes.length === 0) return this;
    this.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: indexes.map((index) => `${table.tableArn}/index/${index}`),
      }),
    );
    return this;
  }
}

/** Bundling hooks that copy package files into the function's asset, beside index.mjs. */
function copyBesideBundle(files: readonly string[]) {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir: string, outputDir: string) =>
      files.map((file) => `cp "${inputDir}/node_modules/${file}" "${outputDir}/"`),
  };
}
