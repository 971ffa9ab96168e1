/**
 * The webhooks' shared vocabulary (docs/webhooks.md). Endpoints are managed through the API
 * (lib/webhooks/endpoints.ts, data in lib/data/webhooks/webhooks.ts); deliveries are made by the dispatcher
 * (lib/webhooks/fan-out.ts, deliver.ts, due.ts; data in lib/data/webhook-deliveries.ts).
 */

/** A signing secret: `whsec_` + base64 of 32 random bytes; a rotated-out one signs until `expiresAt`. */
export interface EndpointSecret {
  secret: string;
  /** Epoch ms after which this secret no longer signs; null: the current secret. */
  expiresAt: number | null;
}

export interface Endpoint {
  accountId: string;
  /** `we_` + 24 hex digits. */
  id: string;
  url: string;
  /** Event types, `<resource>.*` or `*`. */
  events: string[];
  description: string | null;
  enabled: boolean;
  disabledReason: string | null;
  secrets: EndpointSecret[];
  createdAt: string;
  updatedAt: string;
  /** Epoch ms of the last successful attempt, or null. */
  lastSuccessAt: number | null;
  /** Epoch ms of the first failure since the last success, or null. */
  failingSince: number | null;
}

/** At most this many endpoints an account. */
export const MAX_ENDPOINTS = 20;

/** The retry schedule after each failed attempt, in seconds (decisions.md); WEBHOOK_RETRY_SCHEDULE replaces it. */
export const DEFAULT_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000];

/** An endpoint with failures and no success for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000;

/** Each attempt waits at most this long (WEBHOOK_TIMEOUT_MS replaces it). */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
