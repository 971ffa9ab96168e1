import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  ComparisonOperator,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import type { AlarmThresholds } from '../config.ts';

export interface ServiceAlarmsProps {
  api: RestApi;
  functions: Record<string, IFunction>;
  table: TableV2;
  thresholds: AlarmThresholds;
  topic?: ITopic | undefined;
  namePrefix: string;
}

const PERIOD = Duration.minutes(5);

/** The alarms of docs/deploy.md: API 5xx rate and p99 latency, Lambda errors and throttles, DynamoDB trouble. */
export class ServiceAlarms extends Construct {
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: ServiceAlarmsProps) {
    super(scope, id);
    const { api, thresholds, namePrefix } = props;

    const requests = api.metricCount({ period: PERIOD, statistic: 'Sum' });
    const errors5xx = api.metricServerError({ period: PERIOD, statistic: 'Sum' });
    this.add('Api5xxRate', {
      metric: new MathExpression({
        expression: 'IF(requests > 0, 100 * errors / requests, 0)',
        usingMetrics: { requests, errors: errors5xx },
        period: PERIOD,
        label: 'API 5xx %',
      }),
      threshold: thresholds.api5xxPercent,
      description: 'Share of API requests answered with a 5xx. See docs/deploy.md#api-5xx-rate.',
      name: `${namePrefix}-api-5xx-rate`,
    });
    this.add('ApiP99Latency', {
      metric: api.metricLatency({ period: PERIOD, statistic: 'p99' }),
      threshold: thresholds.apiP99LatencyMs,
      description: 'p99 latency of the API. See docs/deploy.md#api-p99-latency.',
      name: `${namePrefix}-api-p99-latency`,
    });
    for (const [name, fn] of Object.entries(props.functions)) {
      this.add(`${name}Errors`, {
        metric: fn.metricErrors({ period: PERIOD, statistic: 'Sum' }),
        threshold: thresholds.lambdaErrors,
        description: `Errors of the ${name} function. See docs/deploy.md#lambda-errors.`,
        name: `${namePrefix}-${name}-errors`,
      });
      this.add(`${name}Throttles`, {
        metric: fn.metricThrottles({ period: PERIOD, statistic: 'Sum' }),
        threshold: thresholds.lambdaThrottles,
        description: `Throttled invocations of the ${name} function. See docs/deploy.md#lambda-throttles.`,
        name: `${namePrefix}-${name}-throttles`,
      });
    }
    const tableMetric = (metricName: string) =>
      new Metric({
        namespace: 'AWS/DynamoDB',
        metricName,
        dimensionsMap: { TableName: props.table.tableName },
        period: PERIOD,
        statistic: 'Sum',
      });
    this.add('DynamoThrottled', {
      metric: tableMetric('ThrottledRequests'),
      threshold: thresholds.dynamoThrottledRequests,
      description: 'Throttled requests on the table. See docs/deploy.md#dynamodb-throttled-requests.',
      name: `${namePrefix}-dynamodb-throttled`,
    });
    this.add('DynamoSystemErrors', {
      metric: tableMetric('SystemErrors'),
      threshold: thresholds.dynamoSystemErrors,
      description: 'DynamoDB answered 5xx. See docs/deploy.md#dynamodb-system-errors.',
      name: `${namePrefix}-dynamodb-system-errors`,
    });

    if (props.topic) {
      const action = new SnsAction(props.topic);
      for (const alarm of this.alarms) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }
  }

  private add(id: string, props: { metric: IMetric; threshold: number; description: string; name: string }) {
    this.alarms.push(
      new Alarm(this, id, {
        alarmName: props.name,
        metric: props.metric,
        threshold: props.threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
        alarmDescription: props.description,
      }),
    );
  }
}
