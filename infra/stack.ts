import { join } from 'node:path';
import { CfnOutput, NestedStack, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { AttributeType, Billing, ProjectionType, StreamViewType, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { holdsKeyHashSecret, routes } from '#functions/routes.ts';
import { importRunnerWorker, workers } from '#functions/workers.ts';
import { type IndexDeclaration, table as tableDeclaration } from '#lib/data/store/table.ts';
import { HASH_SECRET_VARIABLE } from '#lib/keyed-hash.ts';
import type { Stage, StageConfig } from './config.ts';
import type { DeskpipeFunction } from './constructs/deskpipe-function.ts';
import { ImportStorage } from './constructs/import-storage.ts';
import { ServiceAlarms } from './constructs/service-alarms.ts';
import { suppressAcceptedFindings } from './nag-suppressions.ts';
import { ApiStack } from './nested/api-stack.ts';
import { MailStack } from './nested/mail-stack.ts';
import { RouteStack } from './nested/route-stack.ts';
import type { StageParts } from './nested/stage-parts.ts';
import { WorkerStack } from './nested/worker-stack.ts';

export interface DeskpipeStackProps extends StackProps {
  stage: Stage;
  config: StageConfig;
}

const ROOT = join(import.meta.dirname, '..');

const RETENTION: Record<StageConfig['logRetentionDays'], RetentionDays> = {
  7: RetentionDays.ONE_WEEK,
  30: RetentionDays.ONE_MONTH,
  90: RetentionDays.THREE_MONTHS,
  365: RetentionDays.ONE_YEAR,
};

/**
 * The whole service for one stage, one stack deployed as one: the data every part shares (the table, the key-hash
 * secret, the alarm topic) and the stage's outputs here; the parts in nested stacks by concern, each well inside
 * CloudFormation's 500 resources a stack (docs/deploy.md, "Stacks"): the REST API, the routes' functions, mail,
 * the background workers, the alarms. CDK passes what one stack reads of another as parameters and outputs.
 */
export class DeskpipeStack extends Stack {
  readonly table: TableV2;
  readonly api: RestApi;

  constructor(scope: Construct, id: string, props: DeskpipeStackProps) {
    super(scope, id, props);
    const { config, stage } = props;
    const namePrefix = `deskpipe-${stage}`;
    this.table = this.createTable(namePrefix, config);
    const topic = config.alarmTopic
      ? new Topic(this, 'AlarmTopic', { topicName: `${namePrefix}-alarms`, enforceSSL: true })
      : undefined;
    if (topic && config.alarmTopic?.email)
      topic.addSubscription(new EmailSubscription(config.alarmTopic.email));
    const parts: StageParts = {
      stage,
      config,
      namePrefix,
      functionDefaults: {
        projectRoot: ROOT,
        namePrefix,
        memorySize: config.memorySize,
        logRetention: RETENTION[config.logRetentionDays],
      },
      table: this.table,
      topic,
    };

    const mail = new MailStack(this, 'Mail', parts);
    const routeStack = new RouteStack(this, 'Routes', { ...parts, mail: mail.receiving });
    const api = new ApiStack(this, 'Api', { ...parts, routeFunctions: routeStack.functions });
    const workerStack = new WorkerStack(this, 'Workers', { ...parts, mail: mail.receiving });
    this.api = api.api;
    // Every function of the stage, by the name the route table or functions/workers.ts gives it.
    const functions = {
      ...api.functions,
      ...routeStack.functions,
      ...mail.functions,
      ...workerStack.functions,
    };
    const functionOf = (name: string) => {
      const fn = functions[name];
      if (!fn) throw new Error(`no function ${name} in the stage`);
      return fn;
    };
    this.giveKeyHashSecret(namePrefix, [
      functionOf('authorizer'),
      ...routes.filter(holdsKeyHashSecret).map((route) => functionOf(route.name)),
      ...workers.filter((worker) => worker.keyHashSecret).map((worker) => functionOf(worker.name)),
    ]);
    // Imports' secrets key and uploads (docs/imports.md): createImport seals and presigns, the runner opens and reads.
    const imports = new ImportStorage(this, 'Imports', { namePrefix, protectData: config.protectData });
    imports.grantStart(functionOf('createImport'));
    imports.grantRun(functionOf(importRunnerWorker.name));

    // The per-function alarms (two a function), the API's and the table's.
    const alarms = new NestedStack(this, 'ServiceAlarms', {
      description: `deskpipe ${stage}: the service's alarms (API, functions, table)`,
    });
    new ServiceAlarms(alarms, 'Alarms', {
      api: this.api,
      functions,
      table: this.table,
      thresholds: config.alarms,
      topic,
      namePrefix,
    });

    new CfnOutput(this, 'ApiUrl', { value: this.api.url });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'MailBucketName', { value: mail.receiving.bucket.bucketName });
    new CfnOutput(this, 'MailReceiptRuleSet', { value: mail.receiving.ruleSet.receiptRuleSetName });
    new CfnOutput(this, 'ImportUploadBucketName', { value: imports.uploads.bucketName });
    if (topic) new CfnOutput(this, 'AlarmTopicArn', { value: topic.topicArn });

    suppressAcceptedFindings(this);
  }

  private createTable(namePrefix: string, config: StageConfig): TableV2 {
    return new TableV2(this, 'Table', {
      tableName: namePrefix,
      partitionKey: { name: tableDeclaration.partitionKey, type: AttributeType.STRING },
      sortKey: { name: tableDeclaration.sortKey, type: AttributeType.STRING },
      billing: Billing.onDemand(),
      timeToLiveAttribute: tableDeclaration.ttlAttribute,
      dynamoStream: StreamViewType[tableDeclaration.stream],
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: config.pointInTimeRecovery },
      deletionProtection: config.protectData,
      removalPolicy: config.protectData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      globalSecondaryIndexes: (Object.entries(tableDeclaration.indexes) as [string, IndexDeclaration][]).map(
        ([indexName, index]) => ({
          indexName,
          partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
          sortKey: { name: index.sortKey, type: AttributeType.STRING },
          projectionType: ProjectionType[index.projection],
        }),
      ),
    });
  }

  /**
   * The secret API keys are hashed under (lib/accounts/key-hash.ts): generated once per stage and kept across
   * deployments (a new one would invalidate every key). The functions that hash keys, request fingerprints,
   * addresses or the index's free-text keys get it at deploy time (routes.ts holdsKeyHashSecret, workers.ts
   * keyHashSecret): a dynamic reference in their stack's template.
   */
  private giveKeyHashSecret(namePrefix: string, functions: DeskpipeFunction[]): void {
    const secret = new Secret(this, 'ApiKeyHashSecret', {
      secretName: `${namePrefix}-api-key-hash`,
      description: 'HMAC key of the stored API key hashes; changing it invalidates every API key.',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const fn of functions) fn.addEnvironment(HASH_SECRET_VARIABLE, secret.secretValue.unsafeUnwrap());
  }
}
