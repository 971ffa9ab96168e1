import { SERVICE_NAME } from '#lib/log.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * Counts in CloudWatch's embedded metric format (EMF): at most one JSON line per request, from which CloudWatch
 * makes metrics in the namespace POWERTOOLS_METRICS_NAMESPACE (`deskpipe` when unset) with the dimensions
 * service and route. Written here, not with @aws-lambda-powertools/metrics: docs/packages.md says why; the
 * variables are the ones it reads, so a switch to it changes no configuration.
 *
 * Emitted only where CloudWatch reads them, in Lambda, unless POWERTOOLS_METRICS_DISABLED says otherwise:
 * tests, `npm start` and the bench stay quiet without setting anything.
 */
export type BusinessMetric = 'TicketCreated' | 'DealCreated';
export type MetricName = BusinessMetric | 'Responses4xx' | 'Responses5xx';

const disabledSetting = process.env.POWERTOOLS_METRICS_DISABLED?.trim().toLowerCase();
const enabled = disabledSetting
  ? !['1', 'true', 'yes', 'on'].includes(disabledSetting)
  : process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined;
const namespace = process.env.POWERTOOLS_METRICS_NAMESPACE || SERVICE_NAME;

/** Publishes a count of 1 for each name, for this route. */
export function publishCounts(route: string, names: readonly MetricName[]): void {
  if (!enabled || names.length === 0) return;
  const line = {
    _aws: {
      Timestamp: nowMillis(),
      CloudWatchMetrics: [
        {
          Namespace: namespace,
          Dimensions: [['service', 'route']],
          Metrics: names.map((name) => ({ Name: name, Unit: 'Count' })),
        },
      ],
    },
    service: SERVICE_NAME,
    route,
    ...Object.fromEntries(names.map((name) => [name, 1])),
  };
  // Straight to stdout, as Powertools does: under Lambda's JSON log format the runtime's console wraps what it
  // prints in a record of its own, and the EMF object has to stay the top level of its line.
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
