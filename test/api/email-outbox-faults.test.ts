import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { getMessageItem } from '#lib/data/tickets/messages.ts';
import { OUTBOX_CLAIM_MS, outboxPass, runOutbox } from '#lib/email/outbox.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import type { Message } from '#lib/tickets/messages/message.ts';
import { postMessage } from '#lib/tickets/messages/post.ts';
import { nowMillis } from '#lib/time.ts';
import { agentsFile, useTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { type FaultMode, withFault } from '#test/support/faults.ts';
import { useRelaySink } from '#test/support/smtp-sink.ts';

/**
 * A fault sweep of the outbox runner: each store call of a pass that sends one reply fails in turn (the request
 * lost, the answer lost after the write landed, a conflict), then runners whose clocks are past any claim pass
 * again, as the next minute's would. Every reply is delivered, and a second copy is only ever a retry of the
 * same mail (the same Message-ID), never a second mail.
 */
const domain = `f${randomBytes(5).toString('hex')}.test`;
const account = useTestAccount({
  ticket_prefix: 'OF',
  agents: agentsFile(1),
  email: { addresses: [`support@${domain}`] },
});
const clock = useManualClock();
const mail = useRelaySink();

const pass = () =>
  outboxPass({
    sender: mail.relay,
    onError: () => undefined,
  });

const newTicket = (n: number) =>
  createTicket(account.accountId, {
    subject: `Fault ${n}`,
    description: 'Help.',
    requester_email: `c${n}.${randomBytes(3).toString('hex')}@customer.test`,
  });

/** A reply on `ticket` (made beforehand, all at once): queued, due now. */
async function queuedReply(n: number, made?: Awaited<ReturnType<typeof newTicket>>) {
  const ticket = made ?? (await newTicket(n));
  const customer = ticket.requester.email;
  const posted = await postMessage(account.accountId, ticket.uuid, {
    body: `Reply ${n}`,
    author: 'agent',
    agent_id: 1,
  });
  return { customer, ticket, message: posted.message };
}

describe('the outbox under store faults', () => {
  it('every store call of a send failing in turn: each reply delivered, a copy only as a retry with its Message-ID', async () => {
    // The calls of one pass that sends one reply: the due index's Queries, the claim, the reads, the record.
    await queuedReply(0);
    const { operations } = await withFault(undefined, () => pass());
    expect(operations.filter((op) => op === 'TransactWriteItems')).toHaveLength(1);
    const firstAfterIndex = operations.findIndex((op) => op !== 'Query');
    // One fault among the index's Queries (they fail the pass before anything is claimed), then every call after.
    const positions = [1, ...operations.map((_, i) => i + 1).filter((n) => n > firstAfterIndex)];
    const modes: FaultMode[] = ['lost-request', 'lost-answer', 'conflict'];
    const tickets = await Promise.all(
      Array.from({ length: positions.length * modes.length }, (_, i) => newTicket(i + 1)),
    );
    let n = 0;
    let resent = 0;
    for (const at of positions) {
      for (const mode of modes) {
        const { customer, message } = await queuedReply(n + 1, tickets[n++]);
        // A pass that fails whole (its due Query) is logged and tried again by runOutbox; here by the next pass.
        await withFault({ at, mode }, () => pass()).catch(() => undefined);
        // The next runs: one now, one past any claim the faulty run left.
        await pass();
        await clock().advance(OUTBOX_CLAIM_MS + 1);
        await pass();
        const copies = mail.sink.mails.filter((m) => m.recipients.includes(customer));
        const what = `fault ${mode} at call ${at} (${operations[at - 1]})`;
        expect(copies.length, what).toBeGreaterThanOrEqual(1);
        expect(copies.length, what).toBeLessThanOrEqual(2);
        expect(new Set(copies.map((c) => c.header('message-id'))), what).toEqual(
          new Set([`<${message.email?.message_id}>`]),
        );
        if (copies.length === 2) resent++;
        const stored = await getMessageItem<Message>(account.accountId, message.ticketUuid, message.number);
        expect(stored?.email?.delivery, what).toMatchObject({ status: 'sent' });
      }
    }
    // Some faults (a record that did not land) did make the mail go twice: the sweep reaches the at-least-once path.
    expect(resent).toBeGreaterThan(0);
    // Nothing left due.
    await clock().advance(OUTBOX_CLAIM_MS + 1);
    expect((await pass()).read).toBe(0);
  });

  it('a named runner that died holding a claim takes it back when it runs again, not when the claim ends', async () => {
    const { customer, message } = await queuedReply(1_000);
    const owner = `npm-start:${randomBytes(4).toString('hex')}`;
    // The runner dies between the send and its record: the mail went, the claim stays, its entry at the claim's end.
    const died = () => Promise.reject(new Error('killed'));
    await outboxPass({ sender: mail.relay, owner, afterSend: died, onError: () => undefined });
    const copies = () => mail.sink.mails.filter((m) => m.recipients.includes(customer));
    expect(copies()).toHaveLength(1);
    // Another runner does not take it (the claim is live), nor does a run of another name.
    await runOutbox(nowMillis(), { sender: mail.relay, owner: 'npm-start:another' });
    expect((await pass()).counts.sent).toBe(0);
    // Started again under its name: released at once (the run's first step), sent again with its Message-ID.
    await runOutbox(nowMillis(), { sender: mail.relay, owner });
    await outboxPass({ sender: mail.relay, owner, onError: () => undefined });
    expect(copies().map((m) => m.header('message-id'))).toEqual([
      `<${message.email?.message_id}>`,
      `<${message.email?.message_id}>`,
    ]);
    const stored = await getMessageItem<Message>(account.accountId, message.ticketUuid, message.number);
    expect(stored?.email?.delivery).toMatchObject({ status: 'sent' });
  });
});
