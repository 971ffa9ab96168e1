import { randomBytes } from 'node:crypto';
import { mkdir, open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import nodemailer from 'nodemailer';
import { sentMailName } from '#lib/data/mail-store.ts';

/**
 * Where the outbox hands a mail (docs/email.md, "Sending"): one interface, three ways. Locally, SMTP to a relay
 * (`SMTP_RELAY_URL`) or, unset, `.eml` files in a folder; deployed, SES v2 SendEmail with the raw mail and the
 * stage's configuration set (its bounce and complaint notifications). Each says what became of one attempt:
 * accepted (with the id the provider gave it), refused for now (tried again) or refused for good.
 */
export type SendResult =
  | { ok: true; providerMessageId: string }
  | {
      ok: false;
      permanent: boolean;
      error: string;
      /**
       * The provider refused for its rate, not for this mail (SES's sending quota, a relay's "try later"): the mail
       * goes back to the outbox without an attempt counted, and the runner slows down (docs/email.md, "Pace").
       */
      throttled?: boolean;
    };

export interface RawMail {
  envelopeFrom: string;
  to: string[];
  /** The Message-ID the raw mail carries (without its angle brackets). */
  messageId: string;
  raw: Buffer;
}

export interface Sender {
  /** What the docs and logs call it (`smtp://127.0.0.1:1025`, `folder …`, `ses …`). */
  readonly name: string;
  send(mail: RawMail): Promise<SendResult>;
  close(): void;
}

/** How long one SMTP step may wait (connection, greeting, a quiet socket). */
const SMTP_TIMEOUT_MS = 30_000;
/**
 * How long one SMTP attempt may take in all, well inside the outbox's 60 s claim: a relay that trickles its
 * answers is a temporary failure (tried again later, the same Message-ID if it did take the mail after all).
 */
const SMTP_ATTEMPT_MS = 40_000;

/**
 * A relay's answers that refuse for its rate, not for the mail: 421 (closing for now: too many connections or
 * messages) and 454 (SES's SMTP interface: "Throttling failure: Maximum sending rate exceeded").
 */
const SMTP_THROTTLES = new Set([421, 454]);

/**
 * SMTP to a relay (nodemailer's transport). A 5xx answer is a permanent refusal; a 4xx, a refused or dropped
 * connection, a timeout are temporary; a 421 or 454 is a throttle. The relay's Message-ID is the mail's own (SMTP
 * does not replace it).
 */
export function smtpSender(url: string): Sender {
  // Pooled: a runner sends several mails at once and one after another, over connections it keeps (at most 8).
  const transport = nodemailer.createTransport({
    url,
    pool: true,
    maxConnections: 8,
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS,
  } as Parameters<typeof nodemailer.createTransport>[0]);
  return {
    name: url,
    async send(mail) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          transport.sendMail({ envelope: { from: mail.envelopeFrom, to: mail.to }, raw: mail.raw }),
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' })),
              SMTP_ATTEMPT_MS,
            );
          }),
        ]);
        return { ok: true, providerMessageId: mail.messageId };
      } catch (error) {
        const e = error as { responseCode?: number; code?: string; message?: string };
        const code = e.responseCode;
        return {
          ok: false,
          permanent: code !== undefined && code >= 500,
          error: (code ? `${code} ${e.message ?? ''}` : `${e.code ?? 'error'}: ${e.message ?? ''}`)
            .trim()
            .slice(0, 300),
          ...(code !== undefined && SMTP_THROTTLES.has(code) ? { throttled: true } : {}),
        };
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => transport.close(),
  };
}

/**
 * `.eml` files in `dir` (written whole, then renamed), named after the mail's Message-ID (lib/data/mail-store.ts
 * sentMailName: an erasure finds a ticket's sent mail by the ids on its messages, without listing the folder; a
 * mail sent again after a crash replaces its own file): the delivery is `sent` once the file is there.
 */
export function folderSender(dir: string): Sender {
  return {
    name: `folder ${dir}`,
    async send(mail) {
      await mkdir(dir, { recursive: true });
      const name = sentMailName(mail.messageId);
      const temporary = join(dir, `${name}.${randomBytes(4).toString('hex')}.tmp`);
      const file = await open(temporary, 'w');
      await file.writeFile(mail.raw);
      await file.sync();
      await file.close();
      await rename(temporary, join(dir, name));
      return { ok: true, providerMessageId: mail.messageId };
    },
    close: () => undefined,
  };
}

/**
 * SES errors that refuse for the account's sending quota, not for the mail (its rate, its day's count): a throttle
 * (the SDK has already tried again itself, with its own backoff).
 */
const SES_THROTTLES = new Set(['TooManyRequestsException', 'LimitExceededException', 'ThrottlingException']);

/** SES errors that no retry mends (the rest, throttling and service errors, are temporary). */
const SES_PERMANENT = new Set([
  'MessageRejected',
  'MailFromDomainNotVerifiedException',
  'BadRequestException',
  'NotFoundException',
  'AccountSuspendedException',
]);

/**
 * SES v2 SendEmail with the raw mail and the configuration set. SES replaces the Message-ID header with its
 * own, `<MessageId@<region>.amazonses.com>` (`email.amazonses.com` in us-east-1): that (without its brackets, as
 * every Message-ID is kept) is the provider id stored,
 * so replies quoting it thread (decisions.md, threading rule 2).
 */
export function sesSender(configurationSet: string, client = new SESv2Client({})): Sender {
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const host = region === 'us-east-1' ? 'email.amazonses.com' : `${region}.amazonses.com`;
  return {
    name: `ses ${configurationSet}`,
    async send(mail) {
      try {
        const answer = await client.send(
          new SendEmailCommand({
            FromEmailAddress: mail.envelopeFrom,
            Destination: { ToAddresses: mail.to },
            Content: { Raw: { Data: mail.raw } },
            ConfigurationSetName: configurationSet,
          }),
        );
        return { ok: true, providerMessageId: `${answer.MessageId}@${host}` };
      } catch (error) {
        const name = (error as { name?: string }).name ?? 'Error';
        return {
          ok: false,
          permanent: SES_PERMANENT.has(name),
          error: `${name}: ${(error as Error).message ?? ''}`.slice(0, 300),
          ...(SES_THROTTLES.has(name) ? { throttled: true } : {}),
        };
      }
    },
    close: () => client.destroy(),
  };
}
