import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { javaPids, killService, type Service, startService, storeBarrier } from '#test/support/service.ts';
import { type SmtpSink, startSmtpSink } from '#test/support/smtp-sink.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * `npm start` killed (SIGKILL: the service, then its store once what it acknowledged is on disk) while mail is arriving, then started again on
 * the same data: every mail that got a 250 becomes exactly one ticket (decisions.md, "The e-mail channel": an
 * accepted message is never lost), whether it was pending, being processed or processed just before the kill.
 * Meanwhile agents answer those tickets through the API, and the outbox sends the replies to a relay on 127.0.0.1:
 * every reply the API accepted reaches the relay after the restart, each under its one Message-ID (a copy only as
 * a retry of the same mail).
 */
const root = mkdtempSync(join(tmpdir(), 'deskpipe-email-restart-'));
const services: Service[] = [];
let relay: SmtpSink;
beforeAll(async () => {
  relay = await startSmtpSink();
  env.SMTP_RELAY_URL = relay.url;
});
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop()));
  // This file tests the restart, not the shutdown (webhooks-store-stall does): a store a failed run left is reaped.
  for (const pid of services.flatMap((service) => javaPids(service.dynamoPort))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  await relay?.stop();
  rmSync(root, { recursive: true, force: true });
});

const env: Record<string, string> = {
  DYNAMODB_DATA_DIR: join(root, 'dynamodb'),
  MAIL_DATA_DIR: join(root, 'mail'),
  TABLE_NAME: 'deskpipe-email-restart',
  AUTH_CACHE_TTL_SECONDS: '0',
};

/**
 * Its store killed (SIGKILL) after the service (killService), once what it acknowledged is on disk (storeBarrier):
 * DynamoDB does not lose an acknowledged write, and a DynamoDB Local killed just after its answer can lose a whole
 * committed reply.
 */
async function killStore(service: Service): Promise<void> {
  await storeBarrier(service.dynamoPort, env.TABLE_NAME as string);
  for (const pid of javaPids(service.dynamoPort)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
}

describe('npm start killed while mail arrives and replies leave', () => {
  it('makes every mail that got a 250 exactly one ticket, and every committed reply a mail at the relay, after a restart', async () => {
    const first = await startService(env);
    services.push(first);
    const key = first.apiKey;
    const run = randomBytes(4).toString('hex');
    const accepted: string[] = [];
    let sent = 0;
    let killed = false;
    const lane = async () => {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: first.smtpPort,
        secure: false,
        ignoreTLS: true,
      });
      while (!killed) {
        const subject = `Mail ${run} ${sent++}`;
        try {
          await transport.sendMail({
            from: 'rita@customer.test',
            to: 'support@demo.deskpipe.test',
            subject,
            text: 'please help',
          });
          accepted.push(subject);
        } catch {
          // Refused or cut by the kill: never acknowledged, so it may or may not exist.
        }
      }
    };
    // Agents answer the tickets the mail opens, as the mail keeps coming: each reply the API accepted is a mail.
    const replies: string[] = [];
    const answer = async () => {
      while (!killed) {
        try {
          const list = await fetch(`${first.baseUrl}/api/tickets?per_page=5`, {
            headers: { Authorization: `Bearer ${key}` },
          });
          const tickets = ((await list.json()) as { data?: { uuid: string }[] }).data ?? [];
          for (const t of tickets) {
            if (killed) break;
            const r = await fetch(`${first.baseUrl}/api/tickets/${t.uuid}/messages`, {
              method: 'POST',
              headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
              body: JSON.stringify({ body: 'On our way.', author: 'agent', agent_id: 1 }),
            });
            if (r.status === 201) {
              const posted = (await r.json()) as { data: { email?: { message_id: string } } };
              if (posted.data.email) replies.push(posted.data.email.message_id);
            }
          }
        } catch {
          // Cut by the kill: an answer never received may or may not be a reply (not counted).
        }
      }
    };
    const lanes = Promise.all([lane(), lane(), lane(), lane(), answer()]);
    await waitFor(() => accepted.length >= 40 && replies.length >= 5, {
      timeout: 60_000,
      label: '40 mails accepted and 5 replies committed',
    });
    killService(first);
    killed = true;
    await killStore(first);
    await lanes;
    await waitFor(() => first.child.exitCode !== null || first.child.signalCode !== null, {
      timeout: 10_000,
      label: 'the killed service to exit',
    });
    await waitFor(() => javaPids(first.dynamoPort).length === 0, {
      timeout: 10_000,
      label: 'its store gone',
    });

    const second = await startService(env);
    services.push(second);
    /** Every ticket's subject, counted; undefined when a page is not a 200 (a 503 on a loaded machine: asked again). */
    const subjects = async () => {
      const counts = new Map<string, number>();
      for (let page = 1; ; page++) {
        const r = await fetch(`${second.baseUrl}/api/tickets?per_page=100&page=${page}`, {
          headers: { Authorization: `Bearer ${key}` },
        });
        if (r.status !== 200) {
          lastRefusal = `${r.status} ${await r.text()}`;
          return undefined;
        }
        const body = (await r.json()) as { data: { subject: string }[] };
        for (const t of body.data) counts.set(t.subject, (counts.get(t.subject) ?? 0) + 1);
        if (body.data.length < 100) return counts;
      }
    };
    let lastRefusal = 'none';
    let counts = new Map<string, number>();
    await waitFor(
      async () => {
        const seen = await subjects();
        if (seen) counts = seen;
        return seen !== undefined && accepted.every((s) => counts.has(s));
      },
      {
        timeout: 60_000,
        interval: 500,
        label: 'every accepted mail a ticket',
        context: () => `the last page refused: ${lastRefusal}\n${second.tail()}`,
      },
    );
    console.log(
      `${accepted.length} mails accepted before the kill, ${sent} tried; ${counts.size} tickets after`,
    );
    expect(accepted.filter((s) => counts.get(s) !== 1)).toEqual([]);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);

    // Every committed reply reaches the relay, under its own Message-ID; at most one retry copy each.
    const copies = () => {
      const byId = new Map<string, number>();
      for (const m of relay.mails) {
        const id = m.header('message-id')?.slice(1, -1) ?? '';
        byId.set(id, (byId.get(id) ?? 0) + 1);
      }
      return byId;
    };
    // The restarted runner takes its claims back at once; a loaded machine's restart (a JVM) is what takes time.
    await waitFor(() => replies.every((id) => copies().has(id)), {
      timeout: 90_000,
      interval: 250,
      label: 'every committed reply at the relay',
    });
    const sentCopies = copies();
    console.log(
      `${replies.length} replies committed; ${relay.mails.length} mails at the relay, ` +
        `${[...sentCopies.values()].filter((n) => n > 1).length} sent twice`,
    );
    expect(replies.filter((id) => (sentCopies.get(id) ?? 0) > 2)).toEqual([]);
  }, 240_000);
});
