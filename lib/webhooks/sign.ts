import { createHmac } from 'node:crypto';
import packageJson from '../../package.json' with { type: 'json' };
import type { EndpointSecret } from './types.ts';

/**
 * Standard Webhooks signing (decisions.md, "Webhooks"): `webhook-signature` is `v1,<base64 HMAC-SHA256 of
 * "<webhook-id>.<webhook-timestamp>.<body>">`, keyed by the base64-decoded part of the `whsec_` secret, one entry
 * per live secret, space-separated (a receiver that knows either secret of a rotation accepts the delivery).
 * The `standardwebhooks` library's Webhook.verify accepts exactly this (test/unit/webhook-sign.test.ts).
 */

export const USER_AGENT = `deskpipe-webhooks/${packageJson.version}`;

const SECRET_PREFIX = 'whsec_';

/** One signature entry: `v1,<base64>`. */
export function signature(secret: string, id: string, timestamp: number, body: Buffer | string): string {
  const key = Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

/** The secrets that sign at `now`: the current one, and a rotated-out one until it expires. */
export function liveSecrets(secrets: readonly EndpointSecret[], now: number): string[] {
  return secrets.filter((s) => s.expiresAt === null || s.expiresAt > now).map((s) => s.secret);
}

/** The headers of one delivery attempt of an event (its id is the `webhook-id`) sent at `now` (epoch ms). */
export function deliveryHeaders(
  eventId: string,
  body: Buffer,
  secrets: readonly EndpointSecret[],
  now: number,
): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': liveSecrets(secrets, now)
      .map((secret) => signature(secret, eventId, timestamp, body))
      .join(' '),
  };
}
