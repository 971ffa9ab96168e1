/**
 * Every difference between environments, in one typed object (`npx cdk deploy -c stage=<name>`).
 * The local gateway reads the authorizer cache TTL from here too, so it behaves like the deployed stack.
 */
export const STAGES = ['dev', 'prod'] as const;
export type Stage = (typeof STAGES)[number];

export interface StageConfig {
  /** Memory of every function, MB. */
  memorySize: number;
  /** Days of CloudWatch log retention. */
  logRetentionDays: 7 | 30 | 90 | 365;
  /** Retain the table and block its deletion. */
  protectData: boolean;
  pointInTimeRecovery: boolean;
  /** How long API Gateway caches an authorizer answer; a revoked key works at most this long (≤ 60 s). */
  authorizerCacheTtlSeconds: number;
  throttling: { rateLimit: number; burstLimit: number };
}

export const stageConfigs: Record<Stage, StageConfig> = {
  dev: {
    memorySize: 512,
    logRetentionDays: 7,
    protectData: false,
    pointInTimeRecovery: false,
    authorizerCacheTtlSeconds: 30,
    throttling: { rateLimit: 50, burstLimit: 100 },
  },
  prod: {
    memorySize: 1024,
    logRetentionDays: 90,
    protectData: true,
    pointInTimeRecovery: true,
    authorizerCacheTtlSeconds: 30,
    throttling: { rateLimit: 500, burstLimit: 1000 },
  },
};

export function isStage(value: unknown): value is Stage {
  return typeof value === 'string' && (STAGES as readonly string[]).includes(value);
}

/** The value the local gateway uses when AUTH_CACHE_TTL_SECONDS is unset: the deployed dev stage's. */
export const DEFAULT_AUTH_CACHE_TTL_SECONDS = stageConfigs.dev.authorizerCacheTtlSeconds;
