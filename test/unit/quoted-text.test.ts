import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textOf } from '#lib/email/mail-text.ts';
import { QUOTE_HEADERS, SIGNATURES } from '#lib/email/quote-patterns.ts';
import { fragmentsOf, MAX_HEADER_LENGTH, visibleText } from '#lib/email/quoted-text.ts';

/**
 * Quoted history and signatures taken out of a received mail's text (docs/email.md, "The body";
 * lib/email/quoted-text.ts): what email-reply-parser 2.3.7 took out of real mail, and a cost bounded whatever the
 * text. The library froze the service on a mail of blank lines (test/api/email-blank-lines.test.ts: 30,000 of
 * them, 30 s of synchronous CPU; 65,534 of them, 94 s here) and was polynomial in header-like lines.
 */

const kinds = (f: { hidden: boolean; quoted: boolean; signature: boolean }) =>
  [f.hidden && 'hidden', f.quoted && 'quoted', f.signature && 'signature'].filter(Boolean).join(' ');

/** [text, its visible text, its fragments top-down] as email-reply-parser 2.3.7 answered them. */
const LIBRARY: [string, string, [string, string][]][] = [
  [
    'Thanks!\n\nOn Mon, 1 Jan 2026 at 10:00, Ann <ann@acme.test> wrote:\n> Is it fixed?\n> Ann',
    'Thanks!\n',
    [
      ['Thanks!\n', ''],
      ['On Mon, 1 Jan 2026 at 10:00, Ann <ann@acme.test> wrote:\n> Is it fixed?\n> Ann', 'hidden quoted'],
    ],
  ],
  [
    'Yes.\n\nOn Mon, Jan 1, 2024 at 10:00 AM Ann Smith <ann.smith@example.com>\nwrote:\n> question\n> more',
    'Yes.\n',
    [
      ['Yes.\n', ''],
      [
        'On Mon, Jan 1, 2024 at 10:00 AM Ann Smith <ann.smith@example.com> wrote:\n> question\n> more',
        'hidden quoted',
      ],
    ],
  ],
  [
    'Oui.\n\nLe lun. 1 janv. 2024 à 10:00, Ann <ann@example.com> a écrit :\n> question',
    'Oui.\n',
    [
      ['Oui.\n', ''],
      ['Le lun. 1 janv. 2024 à 10:00, Ann <ann@example.com> a écrit :\n> question', 'hidden quoted'],
    ],
  ],
  [
    'Ja.\n\nAm 01.01.2024 um 10:00 schrieb Ann <ann@example.com>:\n> Frage',
    'Ja.\n',
    [
      ['Ja.\n', ''],
      ['Am 01.01.2024 um 10:00 schrieb Ann <ann@example.com>:\n> Frage', 'hidden quoted'],
    ],
  ],
  [
    'Text\n\nEl lun, 1 ene 2024 a las 10:00, Ann (<a@b.c>) escribió:\n> q',
    'Text\n',
    [
      ['Text\n', ''],
      ['El lun, 1 ene 2024 a las 10:00, Ann (<a@b.c>) escribió:\n> q', 'hidden quoted'],
    ],
  ],
  [
    'Text\n\nW dniu 1.01.2024 o 10:00, Ann <a@b.c> pisze:\n> q',
    'Text\n',
    [
      ['Text\n', ''],
      ['W dniu 1.01.2024 o 10:00, Ann <a@b.c> pisze:\n> q', 'hidden quoted'],
    ],
  ],
  [
    'Dank\n\nOp 1 jan. 2024 om 10:00 schreef\nAnn <a@b.c>:\n> q',
    'Dank\n',
    [
      ['Dank\n', ''],
      ['Op 1 jan. 2024 om 10:00 schreef Ann <a@b.c>:\n> q', 'hidden quoted'],
    ],
  ],
  [
    'Thanks\n\n2024-01-01 10:00 GMT+01:00 Ann <a@b.c>:\n> q',
    'Thanks\n',
    [
      ['Thanks\n', ''],
      ['2024-01-01 10:00 GMT+01:00 Ann <a@b.c>:\n> q', 'hidden quoted'],
    ],
  ],
  [
    'Top\n\nFrom: Ann <ann@example.com>\nSent: Monday\nTo: x\nSubject: y\n\nold body',
    'Top\n',
    [
      ['Top\n', ''],
      ['From: Ann <ann@example.com>\nSent: Monday\nTo: x\nSubject: y\n\nold body', 'hidden quoted'],
    ],
  ],
  [
    'Reply\n\n-----Original Message-----\nFrom: a\nold',
    'Reply\n',
    [
      ['Reply\n', ''],
      ['-----Original Message-----\nFrom: a\nold', 'hidden quoted'],
    ],
  ],
  [
    'It is burning.\n\n-- \nRita\nSent from my phone',
    'It is burning.\n',
    [
      ['It is burning.\n', ''],
      ['-- \nRita', 'hidden signature'],
      ['Sent from my phone', 'hidden signature'],
    ],
  ],
  [
    'Inline\n> q1\nanswer 1\n> q2\nanswer 2\n\nSent from my iPhone',
    'Inline\nanswer 1\nanswer 2\n',
    [
      ['Inline', ''],
      ['> q1', 'hidden quoted'],
      ['answer 1', ''],
      ['> q2', 'hidden quoted'],
      ['answer 2\n', ''],
      ['Sent from my iPhone', 'hidden signature'],
    ],
  ],
  [
    'Hi\n\nBest regards,\nBob\nACME',
    'Hi\n',
    [
      ['Hi\n', ''],
      ['Best regards,\nBob\nACME', 'hidden signature'],
    ],
  ],
  [
    'x\r\n\r\nOn Mon, A wrote:\r\n> y\r\n',
    'x\n',
    [
      ['x\n', ''],
      ['On Mon, A wrote:\n> y', 'hidden quoted'],
      ['', 'hidden'],
    ],
  ],
  ['Hello   \n  indented  \nbye', 'Hello\n  indented\nbye', [['Hello\n  indented\nbye', '']]],
  ['> only quote\n> more', '', [['> only quote\n> more', 'hidden quoted']]],
  [
    'body ~~~\n\n> q',
    'body ',
    [
      ['body ~~~', ''],
      ['> q', 'hidden quoted'],
    ],
  ],
];

describe('what is taken out', () => {
  it.each(LIBRARY)('is what email-reply-parser 2.3.7 took out of %j', (text, visible, fragments) => {
    const found = fragmentsOf(text);
    expect(found.map((f) => [f.content, kinds(f)])).toEqual(fragments);
    expect(visibleText(found)).toBe(visible);
  });

  it('differs where the library ran on: no header over 200 characters, a broken header joined from 3 lines at most', () => {
    // A line over MAX_HEADER_LENGTH characters is never a quote header (nor a signature).
    const name = 'n'.repeat(MAX_HEADER_LENGTH);
    expect(visibleText(fragmentsOf(`Thanks\n\nOn Mon, ${name} wrote:\n> q`))).toBe(
      `Thanks\n\nOn Mon, ${name} wrote:`,
    );
    expect(visibleText(fragmentsOf(`Thanks\n\nOn Mon, ${name.slice(20)} wrote:\n> q`))).toBe('Thanks\n');
    // The library joined `Op … schreef` up to the last line ending in `:` of the whole text, hiding the reply's
    // own `Note:` below the quote with it; here the header is its 2 lines and the note stays.
    const split = fragmentsOf('Dank\n\nOp 1 jan. 2024 om 10:00 schreef\nAnn <a@b.c>:\n> q\n> r\n> s\nNote:');
    expect(split.map((f) => [f.content, kinds(f)])).toEqual([
      ['Dank\n', ''],
      ['Op 1 jan. 2024 om 10:00 schreef Ann <a@b.c>:\n> q\n> r\n> s', 'hidden quoted'],
      ['Note:', ''],
    ]);
  });
});

/**
 * The worst texts found (by hand and by random search over each pattern's shapes), each the 65,536 characters a
 * body is cut to: runs of blank lines (the library: 94 s for the first), lines the library's `\s*` and
 * `[\s\S]+` ran on across the text, single lines its nested `.+` are polynomial in (` on at`: 0.5 s in 4 KB), and
 * header-like lines just under the length a header may have, each asked whether it is one.
 */
const SIZE = 65_536;
const fill = (unit: string) => unit.repeat(Math.ceil(SIZE / unit.length)).slice(0, SIZE);
/** Its first and last lines made `x` (a text is trimmed before it is parsed). */
const framed = (text: string) => `x\n${text.slice(2, -2)}\nx`;
/** A line of `length` characters: `head`, `unit` repeated, `tail`. */
const line = (head: string, unit: string, tail: string, length = MAX_HEADER_LENGTH - 1) =>
  head + unit.repeat(length).slice(0, length - head.length - tail.length) + tail;
/** Header-like lines just under MAX_HEADER_LENGTH, each below a quoted line (so each is asked if it is a header). */
const underQuotes = (l: string) => fill(`> a\n${l}\n`);
const WORST: [string, string][] = [
  ['blank lines', `x${'\n'.repeat(SIZE - 2)}x`],
  ['blank lines, CRLF', `x${'\r\n'.repeat(SIZE / 2 - 1)}x`],
  ['whitespace-only lines', framed(fill(' \n'))],
  ['tab and space lines', framed(fill('\t \n'))],
  ['`On` lines', fill('On a b\n')],
  ['`On … wrote` lines', fill('On a b wrote x\n')],
  ['`Op`/`schreef` lines', fill('Op x\nschreef y\nz\n')],
  ['`skrev` lines', fill('abc. x\nskrev y\nz\n')],
  ['`在`/`写道：` lines', fill('在 x\n写道：y\nz\n')],
  ['one line that never says `wrote:`', `On ${'a '.repeat(SIZE / 2 - 2)}`],
  ['one line of ` on at`', `${' on at'.repeat(SIZE / 6 - 2)}wrote:x`],
  ['` on at` lines', underQuotes(line('', ' on at', 'wrote:x'))],
  ['`ср, … г. в` lines', underQuotes(line('ср, ', ' г. в x, <[', 'x'))],
  ['`ср, … г. в … ]:` lines', underQuotes(line('ср, ', ' г. в x, ', ']:'))],
  ['`De:` lines', underQuotes(line('De:', ' <[', 'x'))],
  ['`From:` lines', underQuotes(line('From:', ' <[', 'x'))],
  ['`01.01.2024 … "` lines', underQuotes(line('01.01.2024', '12:34 " <', '> :x'))],
  ['`12:34 … "` lines', underQuotes(line('12:34', '2024 " <', '> :x'))],
  ['`1234 from <` lines', underQuotes(line('', '1234 from <', '>:x'))],
  ['`Am … schrieb` lines', underQuotes(line('Am', ' x um schrieb <[', ']>x'))],
  ['`Le … écrit` lines', underQuotes(line('Le', ' a', 'écrit x'))],
  ['tildes', `${'~'.repeat(SIZE - 1)}x`],
  ['`-- ` lines', fill('-- \n')],
];

/** Every run of a pattern (or of a pattern's necessary condition): how many, and the longest text one was given. */
const runs = { count: 0, longest: 0 };
const patterns = [...QUOTE_HEADERS.flatMap((p) => (p.quick ? [p.regex, p.quick] : [p.regex])), ...SIGNATURES];

beforeAll(() => {
  for (const regex of patterns) {
    const exec = regex.exec;
    // test() runs exec(): counted without a hook in the code.
    regex.exec = function (this: RegExp, text: string) {
      runs.count++;
      runs.longest = Math.max(runs.longest, text.length);
      return exec.call(this, text);
    };
  }
});
afterAll(() => {
  for (const regex of patterns) delete (regex as { exec?: unknown }).exec;
});

describe('the cost', () => {
  it.each(WORST)(
    'of %s is bounded: each pattern runs on at most 200 characters, a few dozen times a line',
    (_, text) => {
      runs.count = 0;
      runs.longest = 0;
      const started = performance.now();
      const { text: kept } = textOf(text, false);
      const took = performance.now() - started;
      expect(kept.length).toBeGreaterThan(MAX_HEADER_LENGTH);
      expect(runs.longest).toBeLessThanOrEqual(MAX_HEADER_LENGTH);
      // 25 signature patterns a line, the quote headers only where their needle, head or tail is (measured: at most
      // 29 runs a line in these texts).
      expect(runs.count).toBeLessThanOrEqual(40 * text.split('\n').length);
      // Generous, for a loaded machine: these took 0–110 ms each with 2 cores shared by a dozen processes.
      expect(took, `${took} ms`).toBeLessThan(1_000);
    },
  );
});
