import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { PRIORITIES } from '#lib/accounts/types.ts';
import { NotFound } from '#lib/errors.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { oneOf, optionalText, parseInput, requiredEmail, requiredText } from '#lib/validation.ts';
import { lambdaContext, proxyEvent } from '#test/support/events.ts';

const caller = {
  accountId: 'acc-1',
  plan: 'pro' as const,
  keyId: 'key_1',
  rateLimit: 1_000_000,
  scopes: '*',
};

const schema = v.object({
  subject: requiredText('subject', 255),
  requester_email: requiredEmail('requester_email'),
  requester_name: optionalText('requester_name', 255),
  priority: oneOf('priority', PRIORITIES),
});

/** A route built on the shared stack, as every real handler is. */
const echo = httpHandler({ route: { name: 'echo', scope: 'tickets:read' }, body: true }, async (request) => ({
  statusCode: 201,
  body: { input: parseInput(schema, request.body), baseUrl: request.baseUrl },
}));

const post = (body: string | Record<string, unknown>, headers: Record<string, string> = {}) =>
  echo(proxyEvent({ method: 'POST', path: '/api/echo', caller, body, headers }), lambdaContext);

const parse = (response: { body: string }) => JSON.parse(response.body);

describe('shared HTTP handler stack', () => {
  it('parses a JSON object body, trims strings and treats blank optional fields as absent', async () => {
    const response = await post({
      subject: '  Hello ',
      requester_email: 'a@b.co',
      requester_name: '  ',
      extra: 1,
    });
    expect(response.statusCode).toBe(201);
    expect(parse(response).input).toEqual({ subject: 'Hello', requester_email: 'a@b.co' });
    expect(parse(response).baseUrl).toBe('https://api.test/test');
  });

  it('answers 422 in the Laravel shape with the request field names', async () => {
    const response = await post({ subject: 'x'.repeat(256), requester_email: 'nope', priority: 'asap' });
    expect(response.statusCode).toBe(422);
    expect(parse(response)).toEqual({
      message: 'The subject field must not be greater than 255 characters. (and 2 more errors)',
      errors: {
        subject: ['The subject field must not be greater than 255 characters.'],
        requester_email: ['The requester email field must be a valid email address.'],
        priority: ['The selected priority is invalid.'],
      },
    });
  });

  it('counts an empty string as missing for a required field', async () => {
    const response = await post({ subject: '   ', requester_email: 'a@b.co' });
    expect(parse(response)).toEqual({
      message: 'The subject field is required.',
      errors: { subject: ['The subject field is required.'] },
    });
  });

  it.each([
    ['not JSON', '{"subject":', 400],
    ['a JSON array', '[1,2]', 400],
    ['JSON null', 'null', 400],
    ['a JSON string', '"hi"', 400],
  ])('answers 400 to a body that is %s', async (_label, body, status) => {
    const response = await post(body, { 'Content-Type': 'application/json' });
    expect(response.statusCode).toBe(status);
    expect(parse(response).message).toEqual(expect.any(String));
  });

  it('answers 415 without a JSON content type, and accepts a charset parameter', async () => {
    const body = JSON.stringify({ subject: 's', requester_email: 'a@b.co' });
    expect((await post(body, { 'Content-Type': 'text/plain' })).statusCode).toBe(415);
    expect(
      (await echo(proxyEvent({ method: 'POST', path: '/x', caller, body }), lambdaContext)).statusCode,
    ).toBe(415);
    expect((await post(body, { 'content-type': 'application/json; charset=utf-8' })).statusCode).toBe(201);
  });

  it('answers 413 to a body over 1 MiB', async () => {
    const response = await post({ subject: 's', requester_email: 'a@b.co', pad: 'x'.repeat(1024 * 1024) });
    expect(response.statusCode).toBe(413);
    expect(parse(response).message).toMatch(/1 MiB/);
  });

  it('turns a typed error into its status and an unexpected one into a bare 500 with the request id', async () => {
    const notFound = httpHandler({ route: { name: 't', scope: 'tickets:read' } }, async () => {
      throw new NotFound();
    });
    const broken = httpHandler({ route: { name: 't', scope: 'tickets:read' } }, async () => {
      throw new Error('connect ECONNREFUSED 10.0.0.1 table=secret');
    });
    const event = proxyEvent({ path: '/x', caller, headers: { 'X-Request-Id': 'req-42' } });
    const nf = await notFound(event, lambdaContext);
    expect(nf.statusCode).toBe(404);
    expect(parse(nf)).toEqual({ message: 'Not found.' });
    const crash = await broken(event, lambdaContext);
    expect(crash.statusCode).toBe(500);
    expect(parse(crash)).toEqual({ message: 'Server error.', request_id: 'req-42' });
    expect(crash.headers?.['X-Request-Id']).toBe('req-42');
  });
});
