import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MailServer, startMailServer } from '#infra/local/mail.ts';
import { createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { submitRaw } from '#test/support/kept-mail.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * A small mail must not cost more than a large one (decisions.md, "The e-mail channel", "Bounded": a mail
 * "never holds back other mail (others' mail is still processed within 10 s)"). The body is cut to 65,536
 * characters before quoted text is looked for, but email-reply-parser's quote-header regexes are quadratic in runs
 * of blank (or whitespace-only) lines: `x`, 30,000 blank lines, `x` (60 KB on the wire) takes ~30 s of synchronous
 * CPU (65,534 lines: ~2 minutes), during which npm start's one process answers nothing: no SMTP, no API, no other
 * account's mail. Found by the review of issues 37/38 (adversarial run against npm start: another account's GET
 * /api/pipelines took 26.7 s, its mail 29.9 s). Deployed, the inbound function would run into its 120 s timeout.
 */
const gateway = useGateway();
let server: MailServer;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mail-blank-'));
  server = await startMailServer({ port: 0, dir });
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function mailAccount(): Promise<TestAccount & { address: string }> {
  const domain = `bl${randomBytes(5).toString('hex')}.test`;
  const account = await createTestAccount({ email: { addresses: [`support@${domain}`] } });
  return { ...account, address: `support@${domain}` };
}

const submit = (raw: string, envelope: { from: string; to: string }) => submitRaw(server.port, raw, envelope);

const logged = async (account: TestAccount, id: string) => {
  const r = await gateway.call('GET', '/api/email/inbound?limit=100', { key: account.apiKey });
  expect(r.status, r.text).toBe(200);
  return (r.body.data as { id: string; outcome: string }[]).find((e) => e.id === id);
};

describe('a mail of blank lines', () => {
  it("does not hold back another account's mail: processed within 10 s of its sending", async () => {
    const poisoned = await mailAccount();
    const other = await mailAccount();
    const blank = await submit(
      [
        'From: mallory@evil.test',
        `To: ${poisoned.address}`,
        'Subject: nothing much',
        '',
        `x${'\r\n'.repeat(30_000)}x`,
        '',
      ].join('\r\n'),
      { from: 'mallory@evil.test', to: poisoned.address },
    );
    const sentAt = Date.now();
    const id = await submit(
      ['From: omar@customer.test', `To: ${other.address}`, 'Subject: not held back', '', 'hello', ''].join(
        '\r\n',
      ),
      { from: 'omar@customer.test', to: other.address },
    );
    await waitFor(() => logged(other, id), { timeout: 120_000, label: "the other account's mail processed" });
    const took = Date.now() - sentAt;
    expect(took, `the other account's mail took ${took} ms from its sending to its ticket`).toBeLessThan(
      10_000,
    );
    // The blank mail itself is a ticket too (its text kept as sent, nothing taken out).
    expect(
      await waitFor(() => logged(poisoned, blank), { timeout: 120_000, label: 'the blank mail' }),
    ).toMatchObject({ outcome: 'new_ticket' });
  }, 300_000);
});
