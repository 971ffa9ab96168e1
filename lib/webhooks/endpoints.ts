import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { isLocalStage } from '#lib/config/stage.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { isEndpointId, newEndpointId } from '#lib/data/webhooks/endpoint-ids.ts';
import {
  createEndpoint,
  deleteEndpoint,
  EndpointLimitReached,
  EndpointNotFound,
  getEndpoint,
  listEndpoints,
  updateEndpoint,
} from '#lib/data/webhooks/webhooks.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { updateVersioned, type Versioned } from '#lib/versioned-update.ts';
import type { RotatedSecret } from './present.ts';
import { CreateEndpointSchema, type UpdateEndpointInput, UpdateEndpointSchema } from './schemas.ts';
import { type Endpoint, type EndpointSecret, MAX_ENDPOINTS } from './types.ts';
import { checkWebhookUrl } from './url-policy.ts';

/**
 * Webhook endpoints (decisions.md, "Webhooks"): register, list, read, change, delete, rotate the secret. The
 * URL policy is checked before anything is stored; an endpoint is found only within its account (404 otherwise).
 */

/** A signing secret: `whsec_` and the base64 of 32 random bytes (Standard Webhooks). */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;
/** Live secrets an endpoint keeps at most: rotating past this drops the oldest previous one early. */
export const MAX_LIVE_SECRETS = 5;

export const LIMIT_MESSAGE = `An account may have at most ${MAX_ENDPOINTS} webhook endpoints: delete one to add another.`;

/** An endpoint as an Idempotency-Key keeps its answer: without secrets, which live in the endpoint alone. */
const withoutSecrets = (e: Endpoint): Endpoint => ({ ...e, secrets: [] });

async function checkUrl(url: string): Promise<void> {
  const verdict = await checkWebhookUrl(url, { allowLocal: isLocalStage() });
  if (verdict !== 'ok') throw ValidationFailed.field('url', verdict);
}

async function findEndpoint(accountId: string, ref: string): Promise<Versioned<Endpoint> | undefined> {
  return isEndpointId(ref) ? getEndpoint(accountId, ref) : undefined;
}

/** The `createWebhook` route: a new endpoint, enabled, with its first secret. */
export async function createWebhookEndpoint(
  accountId: string,
  body: unknown,
  attach?: (endpoint: Endpoint) => CommitAttachment,
): Promise<Endpoint> {
  const input = parseInput(CreateEndpointSchema, body);
  await checkUrl(input.url);
  const nowUs = nowMicros();
  const at = formatTimestamp(nowUs);
  const endpoint: Endpoint = {
    accountId,
    id: newEndpointId(Math.floor(nowUs / 1000)),
    url: input.url,
    events: input.events,
    description: input.description ?? null,
    enabled: true,
    disabledReason: null,
    secrets: [{ secret: newSecret(), expiresAt: null }],
    createdAt: at,
    updatedAt: at,
    lastSuccessAt: null,
    failingSince: null,
  };
  try {
    await createEndpoint(endpoint, { attach: attach?.(withoutSecrets(endpoint)) });
  } catch (error) {
    if (error instanceof EndpointLimitReached) throw ValidationFailed.field('body', LIMIT_MESSAGE);
    throw error;
  }
  return endpoint;
}

/** The `listWebhooks` route: every endpoint of the account, oldest first. */
export function listWebhookEndpoints(accountId: string): Promise<Endpoint[]> {
  return listEndpoints(accountId);
}

/** The `getWebhook` route: unknown, malformed and other accounts' ids are 404. */
export async function getWebhookEndpoint(accountId: string, ref: string): Promise<Endpoint> {
  const stored = await findEndpoint(accountId, ref);
  if (!stored) throw new NotFound();
  return stored.entity;
}

/** The endpoint after a PATCH; enabling it clears why it was disabled and restarts its failure clock. */
export function applyEndpointChange(before: Endpoint, input: UpdateEndpointInput, nowUs: number): Endpoint {
  const after: Endpoint = { ...before };
  if (input.url !== undefined) after.url = input.url;
  if (input.events !== undefined) after.events = input.events;
  if (input.description !== undefined) after.description = input.description;
  if (input.enabled !== undefined) after.enabled = input.enabled;
  if (input.enabled === true) {
    after.disabledReason = null;
    if (!before.enabled) after.failingSince = null;
  }
  if (!isDeepStrictEqual(after, before)) after.updatedAt = formatTimestamp(nowUs);
  return after;
}

/** Runs a versioned change of an endpoint, as PATCH and a rotation make it: 404 when it is not (or no longer) there. */
function changeEndpoint(
  accountId: string,
  ref: string,
  apply: (before: Endpoint) => Endpoint,
  attach: ((after: Endpoint) => CommitAttachment | undefined) | undefined,
): Promise<Versioned<Endpoint>> {
  return updateVersioned<Endpoint>({
    read: () => findEndpoint(accountId, ref),
    apply,
    write: async (before, after, version) => {
      try {
        return await updateEndpoint({ before, after, version }, { attach: attach?.(after) });
      } catch (error) {
        if (error instanceof EndpointNotFound) throw new NotFound();
        throw error;
      }
    },
    changedMessage: 'The webhook endpoint has changed since you read it.',
  });
}

/** The `updateWebhook` route: url, events, description, enabled; a PATCH that changes nothing writes nothing. */
export async function updateWebhookEndpoint(
  accountId: string,
  ref: string,
  body: unknown,
  attach?: (endpoint: Endpoint) => CommitAttachment,
): Promise<Endpoint> {
  const input = parseInput(UpdateEndpointSchema, body);
  if (input.url !== undefined) await checkUrl(input.url);
  const updated = await changeEndpoint(
    accountId,
    ref,
    (before) => applyEndpointChange(before, input, nowMicros()),
    attach,
  );
  return updated.entity;
}

/** The `deleteWebhook` route. */
export async function deleteWebhookEndpoint(
  accountId: string,
  ref: string,
  attach?: (endpoint: Endpoint) => CommitAttachment,
): Promise<Endpoint> {
  const stored = await findEndpoint(accountId, ref);
  if (!stored) throw new NotFound();
  try {
    await deleteEndpoint(accountId, stored.entity.id, { attach: attach?.(stored.entity) });
  } catch (error) {
    if (error instanceof EndpointNotFound) throw new NotFound();
    throw error;
  }
  return stored.entity;
}

/**
 * An endpoint's secrets after a rotation at `nowMs`: `secret` signs from now on, the one that signed until now
 * signs for PREVIOUS_SECRET_TTL_MS more, expired ones are dropped, and at most MAX_LIVE_SECRETS stay (newest first).
 */
export function rotatedSecrets(secrets: EndpointSecret[], secret: string, nowMs: number): EndpointSecret[] {
  const kept = secrets
    .map((s) => (s.expiresAt === null ? { ...s, expiresAt: nowMs + PREVIOUS_SECRET_TTL_MS } : s))
    .filter((s) => (s.expiresAt ?? Number.POSITIVE_INFINITY) > nowMs)
    .sort((a, b) => (b.expiresAt ?? 0) - (a.expiresAt ?? 0));
  return [{ secret, expiresAt: null }, ...kept].slice(0, MAX_LIVE_SECRETS);
}

/** The `rotateWebhookSecret` route: a new secret; the previous one signs beside it for 24 hours. */
export async function rotateWebhookSecret(
  accountId: string,
  ref: string,
  attach?: (rotated: RotatedSecret) => CommitAttachment,
): Promise<RotatedSecret> {
  let previousExpiresAt = 0;
  const rotated = await changeEndpoint(
    accountId,
    ref,
    (before) => {
      const nowUs = nowMicros();
      const nowMs = Math.floor(nowUs / 1000);
      previousExpiresAt = nowMs + PREVIOUS_SECRET_TTL_MS;
      return {
        ...before,
        secrets: rotatedSecrets(before.secrets, newSecret(), nowMs),
        updatedAt: formatTimestamp(nowUs),
      };
    },
    // The kept answer goes without the secret: it is stored nowhere but in the endpoint.
    attach && (() => attach({ secret: null, previousExpiresAt })),
  );
  const secret = rotated.entity.secrets[0]?.secret ?? null;
  return { secret, previousExpiresAt };
}
