import { join } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { WorkerDefinition } from '#functions/workers.ts';
import { DeskpipeFunction } from './deskpipe-function.ts';

/** What a worker's function takes of the stage besides its declaration. */
export interface WorkerFunctionProps {
  table: TableV2;
  projectRoot: string;
  namePrefix: string;
  memorySize: number;
  logRetention: RetentionDays;
  reservedConcurrency: number;
}

/**
 * A background function as functions/workers.ts declares it: its entry and timeout, the stage's memory and log
 * retention, its reserved concurrency, and exactly its table actions and Query on its indexes.
 */
export function workerFunction(
  scope: Construct,
  worker: WorkerDefinition,
  props: WorkerFunctionProps,
): DeskpipeFunction {
  return new DeskpipeFunction(scope, worker.name, {
    entry: join(props.projectRoot, worker.entry),
    projectRoot: props.projectRoot,
    namePrefix: props.namePrefix,
    memorySize: props.memorySize,
    logRetention: props.logRetention,
    timeout: Duration.seconds(worker.timeoutSeconds),
    reservedConcurrentExecutions: props.reservedConcurrency,
  })
    .bindTable(props.table, worker.tableActions)
    .bindIndexQueries(props.table, worker.indexQueries);
}
