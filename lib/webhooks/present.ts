import { formatTimestamp } from '#lib/time.ts';
import type { Endpoint } from './types.ts';

/** An endpoint as the API shows it (decisions.md, "Webhooks"): never its secrets. */
export function presentEndpoint(e: Endpoint) {
  return {
    id: e.id,
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    disabled_reason: e.disabledReason,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
  };
}

/** The signing secret an endpoint signs with now (the one without an expiry), or null. */
export const currentSecret = (e: Endpoint): string | null =>
  e.secrets.find((s) => s.expiresAt === null)?.secret ?? null;

/**
 * A created endpoint, with its secret: the one answer that shows it, besides a rotation's. Null in the answer an
 * Idempotency-Key keeps (lib/webhooks/endpoints.ts keeps it without its secrets: they are stored nowhere else).
 */
export function presentEndpointWithSecret(e: Endpoint) {
  return { ...presentEndpoint(e), secret: currentSecret(e) };
}

/** A rotation's result: the new secret (null in a kept answer) and when the one it replaced stops signing. */
export interface RotatedSecret {
  secret: string | null;
  /** Epoch ms. */
  previousExpiresAt: number;
}

export function presentRotatedSecret(r: RotatedSecret) {
  return { secret: r.secret, previous_secret_expires_at: formatTimestamp(r.previousExpiresAt * 1000) };
}
