import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseMail } from '#lib/email/parse.ts';

/**
 * What the parser keeps of a mail (decisions.md, "The e-mail channel", "Bounded"; docs/email.md): header fields
 * bounded whatever the mail holds, the text cut before quoted text is looked for, and whether quoted history or a
 * signature was taken out. No store: attachments are counted and dropped.
 */
const parse = (raw: string) =>
  parseMail(Readable.from([Buffer.from(raw)]), async (_id, content) => {
    let size = 0;
    for await (const chunk of content) size += (chunk as Buffer).length;
    return size;
  });

const mail = (headers: string[], body: string) => `${headers.join('\r\n')}\r\n\r\n${body}\r\n`;

describe('the header fields kept', () => {
  it('are bounded: 50 To and Cc addresses with their count, names and subjects cut at 255 and marked', async () => {
    const cc = Array.from({ length: 25_000 }, (_, i) => `person${i}@many.test`);
    const to = Array.from({ length: 60 }, (_, i) => `to${i}@many.test`);
    const parsed = await parse(
      mail(
        [
          `From: "${'N'.repeat(450_000)}" <rita@customer.test>`,
          `To: ${to.join(', ')}`,
          `Cc: ${cc.join(', ')}`,
          `Subject: ${'s'.repeat(100_000)}`,
        ],
        'hello',
      ),
    );
    expect(parsed.cc).toEqual(cc.slice(0, 50));
    expect(parsed.ccCount).toBe(25_000);
    expect(parsed.to).toEqual(to.slice(0, 50));
    expect(parsed.toCount).toBe(60);
    expect(parsed.from?.email).toBe('rita@customer.test');
    expect(parsed.from?.name).toBe(`${'N'.repeat(254)}…`);
    expect(parsed.subject).toBe(`${'s'.repeat(254)}…`);
  });

  it('keep short fields as they are, and cut an attachment type or name too long to be one', async () => {
    const boundary = 'b-1';
    const parsed = await parse(
      mail(
        [
          'From: Rita <rita@customer.test>',
          'To: support@acme.test',
          'Subject: Printer',
          'MIME-Version: 1.0',
          `Content-Type: multipart/mixed; boundary="${boundary}"`,
        ],
        [
          `--${boundary}`,
          'Content-Type: text/plain',
          '',
          'See attached.',
          `--${boundary}`,
          `Content-Type: application/${'x'.repeat(300_000)}`,
          `Content-Disposition: attachment; filename="${'f'.repeat(1_000)}.txt"`,
          '',
          'data',
          `--${boundary}--`,
        ].join('\r\n'),
      ),
    );
    expect(parsed).toMatchObject({ subject: 'Printer', to: ['support@acme.test'], toCount: 1, ccCount: 0 });
    expect(parsed.from).toEqual({ email: 'rita@customer.test', name: 'Rita' });
    expect(parsed.attachments).toHaveLength(1);
    expect(parsed.attachments[0]?.content_type.length).toBeLessThanOrEqual(255);
    expect(parsed.attachments[0]?.filename).toMatch(/^f{254}…$/);
  });
});

describe('the text', () => {
  it('is cut to 65,536 characters before quoted text is looked for, and says so', async () => {
    const line = 'A log line pasted in full, one after another.\n';
    const parsed = await parse(
      mail(['From: rita@customer.test', 'Subject: log'], line.repeat(Math.ceil(20_000_000 / line.length))),
    );
    expect(parsed.text.length).toBeLessThanOrEqual(65_536);
    expect(parsed.text.startsWith(line.repeat(100).trim().slice(0, 1000))).toBe(true);
    expect(parsed.textCut).toBe(true);
    expect(parsed.visibleText.length).toBeLessThanOrEqual(65_536);
  });

  it('of a base64 text part is cut too; a short one is whole', async () => {
    const body = Buffer.from('x'.repeat(3_000_000)).toString('base64').replace(/.{76}/g, '$&\r\n');
    const cut = await parse(mail(['From: rita@customer.test', 'Content-Transfer-Encoding: base64'], body));
    expect(cut.text).toBe('x'.repeat(65_536));
    expect(cut.textCut).toBe(true);
    const whole = await parse(mail(['From: rita@customer.test'], 'y'.repeat(65_536)));
    expect(whole.text).toBe('y'.repeat(65_536));
    expect(whole.textCut).toBe(false);
  });

  it('says quoted text was removed only when quoted history or a signature was taken out', async () => {
    const of = async (body: string) =>
      (await parse(mail(['From: rita@customer.test'], body))).quotedTextRemoved;
    // Trailing blanks on its lines, no quote: nothing was taken out.
    expect(await of('Hello   \nthe printer is on fire.  \n\n')).toBe(false);
    expect(await of('Hello,\nthe printer is on fire.')).toBe(false);
    expect(
      await of('Thanks!\n\nOn Mon, 1 Jan 2026 at 10:00, Ann <ann@acme.test> wrote:\n> Is it fixed?\n> Ann'),
    ).toBe(true);
    expect(await of('It is burning.\n\n-- \nRita\nSent from my phone')).toBe(true);
  });

  it('keeps the text as written when nothing was taken out, and the new text only when something was', async () => {
    const plain = await parse(mail(['From: rita@customer.test'], 'Hello   \n  indented  \nbye'));
    expect(plain.visibleText).toBe('Hello   \n  indented  \nbye');
    const quoted = await parse(
      mail(['From: rita@customer.test'], 'Thanks!\n\nOn Mon, 1 Jan 2026, Ann wrote:\n> Is it fixed?'),
    );
    expect(quoted.visibleText).toBe('Thanks!');
  });
});
