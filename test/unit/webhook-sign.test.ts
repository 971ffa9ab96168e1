import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { deliveryHeaders, liveSecrets, USER_AGENT } from '#lib/webhooks/sign.ts';
import packageJson from '../../package.json' with { type: 'json' };

/** Our signatures, checked by the Standard Webhooks reference library receivers use (not by our own code). */
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const body = Buffer.from(
  JSON.stringify({ id: 'evt_00000000010123456789', type: 'ticket.created', data: {} }),
);

describe('Standard Webhooks signing', () => {
  it("signs what the library's Webhook.verify accepts, with the headers of the contract", () => {
    const secret = newSecret();
    const now = Date.now();
    const headers = deliveryHeaders('evt_00000000010123456789', body, [{ secret, expiresAt: null }], now);
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': `deskpipe-webhooks/${packageJson.version}`,
      'webhook-id': 'evt_00000000010123456789',
      'webhook-timestamp': String(Math.floor(now / 1000)),
    });
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(USER_AGENT).toBe(`deskpipe-webhooks/${packageJson.version}`);
    expect(new Webhook(secret).verify(body.toString(), headers)).toEqual(JSON.parse(body.toString()));
  });

  it('signs with every live secret during a rotation, each verifiable alone; an expired one no longer signs', () => {
    const [current, previous, expired] = [newSecret(), newSecret(), newSecret()];
    const now = Date.now();
    const secrets = [
      { secret: current, expiresAt: null },
      { secret: previous, expiresAt: now + 60_000 },
      { secret: expired, expiresAt: now - 1 },
    ];
    expect(liveSecrets(secrets, now)).toEqual([current, previous]);
    const headers = deliveryHeaders('evt_00000000010123456789', body, secrets, now);
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(() => new Webhook(current).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(expired).verify(body, headers)).toThrow(WebhookVerificationError);
  });

  it('is refused by the library for another body, id or timestamp (the check can fail)', () => {
    const secret = newSecret();
    const now = Date.now();
    const headers = deliveryHeaders('evt_00000000010123456789', body, [{ secret, expiresAt: null }], now);
    const hook = new Webhook(secret);
    expect(() => hook.verify(`${body.toString()} `, headers)).toThrow(WebhookVerificationError);
    expect(() => hook.verify(body, { ...headers, 'webhook-id': 'evt_00000000020123456789' })).toThrow(
      WebhookVerificationError,
    );
    expect(() =>
      hook.verify(body, { ...headers, 'webhook-timestamp': String(Math.floor(now / 1000) + 1) }),
    ).toThrow(WebhookVerificationError);
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow(WebhookVerificationError);
  });
});
