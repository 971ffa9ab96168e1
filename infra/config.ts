import type {
  emailInboundQueueWorker,
  emailInboundWorker,
  emailOutboxWorker,
  erasureWorker,
  importRunnerWorker,
  organizationClearingWorker,
  purgeWorker,
  slaBreachesWorker,
  ticketQueueWorker,
  webhookDueWorker,
  webhookStreamWorker,
} from '#functions/workers.ts';

/** The background functions' names (functions/workers.ts). */
export type WorkerName =
  | typeof webhookStreamWorker.name
  | typeof webhookDueWorker.name
  | typeof slaBreachesWorker.name
  | typeof emailOutboxWorker.name
  | typeof purgeWorker.name
  | typeof emailInboundWorker.name
  | typeof emailInboundQueueWorker.name
  | typeof erasureWorker.name
  | typeof organizationClearingWorker.name
  | typeof ticketQueueWorker.name
  | typeof importRunnerWorker.name;

/**
 * Every difference between environments, in one typed object (`npx cdk deploy -c stage=<name>`).
 * The local gateway reads the authorizer cache TTL from here too, so it behaves like the deployed stack.
 */
export const STAGES = ['dev', 'prod'] as const;
export type Stage = (typeof STAGES)[number];

export interface AlarmThresholds {
  /** Share of API requests answered 5xx over 5 minutes, in percent. */
  api5xxPercent: number;
  /** p99 of the API's latency over 5 minutes, ms. */
  apiP99LatencyMs: number;
  /** Errors of one function over 5 minutes. */
  lambdaErrors: number;
  /** Throttled invocations of one function over 5 minutes. */
  lambdaThrottles: number;
  /** Throttled DynamoDB requests over 5 minutes. */
  dynamoThrottledRequests: number;
  /** DynamoDB system errors (5xx from DynamoDB) over 5 minutes. */
  dynamoSystemErrors: number;
}

export interface StageConfig {
  /** Memory of every function, MB. */
  memorySize: number;
  /** Days of CloudWatch log retention (functions and API access logs). */
  logRetentionDays: 7 | 30 | 90 | 365;
  /** Retain the table on stack deletion and turn on deletion protection. */
  protectData: boolean;
  pointInTimeRecovery: boolean;
  /** How long API Gateway caches an authorizer answer; a revoked key works at most this long (≤ 60 s). */
  authorizerCacheTtlSeconds: number;
  /**
   * Stage-wide API Gateway throttling, for every account together: steady requests per second and burst. Each
   * account has its own per-minute limit besides (decisions.md, "Rate limits"); this one protects the stage.
   */
  throttling: { rateLimit: number; burstLimit: number };
  /**
   * Whether every method behind the authorizer requires the account's API Gateway API key, which puts each account
   * under its usage plan's throttle (lib/accounts/edge-limits.ts: the figures; docs/deploy.md, "Tenants at the edge").
   * An account whose key is in no usage plan is then answered 403 by API Gateway: a stage deployed before the usage
   * plans takes one deployment with this off, `apply --aws` of every account, then this on.
   */
  edgeKeysRequired: boolean;
  /**
   * Reserved concurrency of the background functions: what they are sure to get, and all they may take, so a
   * stream catch-up or a slow receiver's backlog never takes the account's concurrency from the API.
   */
  workerConcurrency: Record<WorkerName, number>;
  /**
   * The webhook due runners (docs/webhooks.md, "The runners"): how many invocations of the due function run each
   * minute, each on its own share of the DUE_SHARDS due partitions (1 to 16). Each runs 128 attempt slots
   * (48 for one account or one endpoint; 16 for slow-lane endpoints of every account, 4 for one account's). `workerConcurrency.webhooksDue` must be at least
   * twice this: a run's tail overlaps the next one's start.
   */
  webhookDueRunners: number;
  /**
   * Receiving mail (docs/email.md, "Deployed"): SES receives for `domain` (every address in it, and their
   * `local+token@` forms; an account's addresses must be in it to reach the service) through the stage's receipt rule
   * set. The domain's MX record and SES identity, and activating the rule set, are the operator's (docs/deploy.md).
   */
  mail: {
    domain: string;
    /** Days raw mail and attachments are kept in the mail bucket (decisions.md: 30). */
    keepDays: number;
    /**
     * The SES account's sending quota in this region, mails a second (the outbox's EMAIL_SEND_RATE: docs/email.md,
     * "Pace and fair shares"). Raise it with the quota AWS grants; a lower real quota shows as throttles, which the
     * outbox waits out without counting an attempt.
     */
    sendRatePerSecond: number;
  };
  alarms: AlarmThresholds;
  /** An SNS topic for the alarms (optionally with an e-mail subscription); null: alarms without actions. */
  alarmTopic: { email?: string } | null;
}

export const stageConfigs: Record<Stage, StageConfig> = {
  dev: {
    memorySize: 512,
    logRetentionDays: 7,
    protectData: false,
    pointInTimeRecovery: false,
    authorizerCacheTtlSeconds: 30,
    throttling: { rateLimit: 50, burstLimit: 100 },
    edgeKeysRequired: true,
    workerConcurrency: {
      webhooksStream: 5,
      webhooksDue: 4,
      slaBreaches: 2,
      emailOutbox: 2,
      trashPurge: 2,
      emailInbound: 5,
      // The event source mapping's pollers start at 5 batches at once: 5 lets them run without throttles.
      emailInboundQueue: 5,
      erasures: 2,
      organizationClearing: 2,
      ticketQueue: 2,
      importRunner: 2,
    },
    // Two runners (8 shards each): the pool's code path as prod runs it, at a dev's load (≈ 128 slots: ~500
    // deliveries/s at a 200 ms receiver).
    webhookDueRunners: 2,
    // SES's sandbox rate: 1 mail a second.
    mail: { domain: 'dev.mail.deskpipe.example', keepDays: 30, sendRatePerSecond: 1 },
    alarms: {
      api5xxPercent: 5,
      apiP99LatencyMs: 2000,
      lambdaErrors: 10,
      lambdaThrottles: 10,
      dynamoThrottledRequests: 50,
      dynamoSystemErrors: 5,
    },
    alarmTopic: null,
  },
  prod: {
    memorySize: 1024,
    logRetentionDays: 90,
    protectData: true,
    pointInTimeRecovery: true,
    authorizerCacheTtlSeconds: 30,
    // The load to design for (docs/capacity.md): 2,000 requests/s across accounts. 2,500 leaves a quarter of
    // headroom; the burst takes two seconds of it. At ~50 ms a request that is ~125 concurrent functions, far
    // inside the region's default 1,000 less the workers' reservations below.
    throttling: { rateLimit: 2500, burstLimit: 5000 },
    edgeKeysRequired: true,
    // The stream function runs one batch per stream shard at a time (parallelization factor 1): 50 covers a table
    // of 50 partitions; beyond, batches wait (records are kept 24 h) rather than take the API's concurrency. The
    // due function runs as webhookDueRunners invocations a minute, each at most 80 s: two of one runner may overlap.
    // The outbox: one run a minute, overlapping the next by its tail (docs/email.md, "Sending").
    // The purge: one run at a time, two when one's tail meets the next. The inbound function only routes (each
    // account's copy made and queued, ~0.1 s a mail): 20 route ~200 mails/s. The processing function: 20 batches at
    // once (the local bench's ~0.2 s a mail makes that ~100 mails/s), taken from the fair queue by a share of the
    // accounts, so a flood to one account waits in its own group (docs/email.md, "One account's share").
    workerConcurrency: {
      webhooksStream: 50,
      webhooksDue: 16,
      slaBreaches: 2,
      emailOutbox: 2,
      trashPurge: 2,
      emailInbound: 20,
      emailInboundQueue: 20,
      erasures: 2,
      organizationClearing: 2,
      ticketQueue: 2,
      importRunner: 2,
    },
    // The design load is 50,000 deliveries a minute (833/s, docs/capacity.md): 8 runners × 64 slots at a 200 ms
    // receiver is 2,560 attempts/s while they run (50 s of each minute: ≈ 2,130/s on average), ≥ 1,000/s even at a
    // 400 ms receiver; 2 shards each. The 16 reserved for them leave the API the account's concurrency less 66.
    webhookDueRunners: 8,
    // SES's first production quota, 14 mails a second (raised on request): the outbox's 8 sends at once at
    // ~50-500 ms each keep up 16-160 a second, so the quota, not the pool, sets the pace (docs/capacity.md).
    mail: { domain: 'mail.deskpipe.example', keepDays: 30, sendRatePerSecond: 14 },
    alarms: {
      api5xxPercent: 1,
      apiP99LatencyMs: 1000,
      lambdaErrors: 1,
      lambdaThrottles: 1,
      dynamoThrottledRequests: 10,
      dynamoSystemErrors: 1,
    },
    alarmTopic: {},
  },
};

export function isStage(value: unknown): value is Stage {
  return typeof value === 'string' && (STAGES as readonly string[]).includes(value);
}

/** The value the local gateway uses when AUTH_CACHE_TTL_SECONDS is unset: the deployed dev stage's. */
export const DEFAULT_AUTH_CACHE_TTL_SECONDS = stageConfigs.dev.authorizerCacheTtlSeconds;
