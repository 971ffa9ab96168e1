import type { SESEventRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { authenticationResults } from '#lib/email/authentication.ts';
import { receivedMailOf } from '#lib/email/ses-receipt.ts';

/**
 * A mail's `email.authentication` (decisions.md, "The e-mail channel", "Authentication"): locally from the
 * `Authentication-Results` header (RFC 8601) of the server's own authserv-id only, deployed from SES's verdicts.
 */
const ours = 'deskpipe.local';
const of = (headers: string[], from = 'desk.test') => authenticationResults(headers, ours, from);
const none = { spf: 'none', dkim: 'none', dmarc: 'none' };

describe('Authentication-Results (RFC 8601)', () => {
  it('reads spf, dkim and dmarc of the header with the trusted authserv-id', () => {
    expect(
      of([
        'deskpipe.local 1 (relay one); spf=pass (sender ok) smtp.mailfrom=desk.test; ' +
          'dkim=pass header.i=@desk.test header.s=s1; dmarc=pass (p=reject) header.from=desk.test',
      ]),
    ).toEqual({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
    expect(
      of(['DeskPipe.Local; SPF=SoftFail smtp.mailfrom=desk.test; DMARC=PASS header.from=Desk.Test']),
    ).toEqual({
      spf: 'softfail',
      dkim: 'none',
      dmarc: 'pass',
    });
    expect(of(['"deskpipe.local"; dkim/1=pass header.d=desk.test'])).toMatchObject({ dkim: 'pass' });
    expect(of(['deskpipe.local; none'])).toEqual(none);
  });

  it('ignores every other header: another authserv-id, one that only starts like ours, an unknown version', () => {
    for (const header of [
      'mx.elsewhere.test; dmarc=pass header.from=desk.test',
      'deskpipe.local.elsewhere.test; dmarc=pass header.from=desk.test',
      'deskpipe.localx; dmarc=pass',
      'deskpipe.local 2; dmarc=pass header.from=desk.test',
      '(deskpipe.local) mx.elsewhere.test; dmarc=pass',
      '',
      ';;;=',
    ]) {
      expect(of([header]), header).toEqual(none);
    }
    // The first header of ours counts (the edge relay's, added on top); a later one is the sender's own.
    expect(
      of(['deskpipe.local; dmarc=fail header.from=desk.test', 'deskpipe.local; dmarc=pass']),
    ).toMatchObject({
      dmarc: 'fail',
    });
    expect(of(['mx.elsewhere.test; dmarc=fail', 'deskpipe.local; dmarc=pass'])).toMatchObject({
      dmarc: 'pass',
    });
  });

  it('does not let comments, quoted strings or property values pass for results', () => {
    expect(
      of(['deskpipe.local; dmarc=fail (a; dmarc=pass (nested; x)) header.from=desk.test']),
    ).toMatchObject({
      dmarc: 'fail',
    });
    expect(of(['deskpipe.local; dkim=fail header.b="x; dmarc=pass"'])).toEqual({ ...none, dkim: 'fail' });
    expect(of(['deskpipe.local; spf=fail smtp.mailfrom=dmarc=pass'])).toEqual({ ...none, spf: 'fail' });
    expect(of(['deskpipe.local; dmarc=yes header.from=desk.test'])).toEqual(none);
  });

  it('takes a DMARC verdict only for the From domain, and any passing DKIM signature', () => {
    expect(of(['deskpipe.local; dmarc=pass header.from=elsewhere.test'])).toMatchObject({ dmarc: 'none' });
    expect(of(['deskpipe.local; dmarc=pass header.from=desk.test'], 'elsewhere.test')).toMatchObject({
      dmarc: 'none',
    });
    expect(of(['deskpipe.local; dmarc=pass'], undefined)).toMatchObject({ dmarc: 'pass' });
    expect(of(['deskpipe.local; dkim=fail header.d=x.test; dkim=pass header.d=desk.test'])).toMatchObject({
      dkim: 'pass',
    });
  });
});

describe("SES's receipt verdicts", () => {
  const record = (receipt: Record<string, unknown>) =>
    ({
      ses: {
        mail: { timestamp: '2026-11-27T09:00:00.000Z', messageId: 'abc', source: 'rita@customer.test' },
        receipt: { recipients: ['support@acme.test'], ...receipt },
      },
    }) as unknown as SESEventRecord;

  it('are the mail’s authentication; a missing or unknown verdict is none, a failed check temperror', () => {
    expect(
      receivedMailOf(
        record({
          spfVerdict: { status: 'PASS' },
          dkimVerdict: { status: 'GRAY' },
          dmarcVerdict: { status: 'FAIL' },
        }),
      ).authentication,
    ).toEqual({ spf: 'pass', dkim: 'none', dmarc: 'fail' });
    expect(
      receivedMailOf(record({ dmarcVerdict: { status: 'PROCESSING_FAILED' }, spfVerdict: { status: 'x' } }))
        .authentication,
    ).toEqual({ spf: 'none', dkim: 'none', dmarc: 'temperror' });
  });
});
