import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fileBytes } from '#lib/data/imports/file-bytes.ts';
import type { ByteSource } from '#lib/imports/byte-source.ts';
import {
  IMPORT_PHASES,
  type ImportErrorRow,
  type ImportedAttachment,
  type ImportedTicket,
  type ImportPhase,
  type ImportRecord,
} from '#lib/imports/records.ts';
import { SourceHostRefused, SourceTooLarge } from '#lib/imports/source-errors.ts';
import { NDJSON_LIMITS, type NdjsonLimits, ndjsonSource } from '#lib/imports/sources/ndjson.ts';
import { INLINE_FILES, INLINE_REASONS } from '#lib/imports/sources/ndjson-attachments.ts';

/**
 * deskpipe's import format read by its reader (docs/import-format.md): the shipped example read to its end in
 * small pages, each by a reader made again from nothing but the last page's `next` (as a job resumed after a crash
 * does), bad lines as error rows naming line and field, lines split across reads, CRLF, an empty file.
 */

const EXAMPLE = new URL('../../examples/import.ndjson', import.meta.url).pathname;

/** Bytes in memory, keeping the ranges asked for. */
function memoryBytes(content: Uint8Array | string) {
  const data = typeof content === 'string' ? Buffer.from(content) : Buffer.from(content);
  const reads: Array<[number, number]> = [];
  const source: ByteSource = {
    size: async () => data.length,
    read: async (offset, length) => {
      reads.push([offset, length]);
      return data.subarray(offset, offset + length);
    },
  };
  return { source, reads };
}

interface Read {
  records: ImportRecord[];
  errors: ImportErrorRow[];
  pages: number;
  nexts: string[];
}

/** A phase read to its end, one fresh reader a page, resumed from `next`. */
async function readPhase(
  bytes: () => ByteSource,
  phase: ImportPhase,
  limits: Partial<NdjsonLimits> = {},
  since?: string,
): Promise<Read> {
  const out: Read = { records: [], errors: [], pages: 0, nexts: [] };
  let from: string | null = null;
  do {
    const page = await ndjsonSource(bytes(), { ...NDJSON_LIMITS, ...limits }).page(phase, from, { since });
    out.records.push(...page.records);
    out.errors.push(...page.errors);
    out.pages += 1;
    from = page.next;
    if (from !== null) out.nexts.push(from);
  } while (from !== null && out.pages < 1000);
  return out;
}

async function readAll(bytes: () => ByteSource, limits: Partial<NdjsonLimits> = {}) {
  const all: Record<string, Read> = {};
  for (const phase of IMPORT_PHASES) all[phase] = await readPhase(bytes, phase, limits);
  return all as Record<ImportPhase, Read>;
}

const SMALL = { pageLines: 2, readBytes: 97 };

const ticketOf = (r: ImportRecord): ImportedTicket => {
  if (r.type !== 'tickets') throw new Error(`not a ticket: ${r.type}`);
  return r.ticket;
};

describe('the example file, read in pages resumed from next', () => {
  it('gives every record exactly, each phase its own type, with no error row', async () => {
    const all = await readAll(() => fileBytes(EXAMPLE), SMALL);
    for (const phase of IMPORT_PHASES) {
      expect(all[phase].errors).toEqual([]);
      expect(all[phase].records.every((r) => r.type === phase)).toBe(true);
      // 14 lines at 2 a page: every phase reads the whole file, in bounded pages.
      expect(all[phase].pages).toBe(7);
    }
    expect(all.teams.records).toEqual([
      { type: 'teams', team: { sourceId: 'grp-1', name: 'Support' } },
      { type: 'teams', team: { sourceId: 'grp-2', name: 'Billing' } },
    ]);
    expect(all.agents.records).toEqual([
      {
        type: 'agents',
        agent: {
          sourceId: 'u-10',
          email: 'maya@northwind.test',
          name: 'Maya Lindqvist',
          active: true,
          teamSourceIds: ['grp-1', 'grp-2'],
        },
      },
      {
        type: 'agents',
        agent: {
          sourceId: 'u-11',
          email: 'tomas@northwind.test',
          name: 'Tomás Berg',
          active: false,
          teamSourceIds: ['grp-1'],
        },
      },
    ]);
    expect(all.organizations.records).toEqual([
      {
        type: 'organizations',
        organization: { sourceId: 'org-1', name: 'Lumen Bakery', domains: ['lumenbakery.test'] },
      },
      {
        type: 'organizations',
        organization: {
          sourceId: 'org-2',
          name: 'Harbor Freight Co',
          domains: ['harborfreight.test', 'hf-shipping.test'],
        },
      },
    ]);
    expect(all.contacts.records.map((r) => (r.type === 'contacts' ? r.contact : r))).toEqual([
      {
        sourceId: 'c-100',
        email: 'ines@lumenbakery.test',
        name: 'Inès Moreau',
        phone: '+33 1 23 45 67 89',
        organizationSourceId: 'org-1',
      },
      {
        sourceId: 'c-101',
        email: 'olu@harborfreight.test',
        name: 'Olu Adeyemi',
        phone: null,
        organizationSourceId: 'org-2',
      },
      { sourceId: 'c-102', email: 'sam.k@example.test', name: null, phone: null, organizationSourceId: null },
    ]);
    const tickets = all.tickets.records.map(ticketOf);
    expect(tickets.map((t) => t.sourceId)).toEqual(['5001', '5002', '5003', '5004']);
    expect(tickets[0]).toEqual({
      sourceId: '5001',
      subject: 'Invoice shows the wrong VAT rate',
      status: 'resolved',
      priority: 'high',
      createdAt: '2024-03-01T09:30:00.000000Z',
      updatedAt: '2024-03-02T16:05:12.250000Z',
      resolvedAt: '2024-03-02T16:05:12.250000Z',
      closedAt: null,
      tags: ['billing', 'vat'],
      requester: { sourceId: 'c-100', email: null },
      assigneeSourceId: 'u-10',
      teamSourceId: 'grp-2',
      organizationSourceId: 'org-1',
      customFields: { invoice_number: 'INV-2024-0117', refund_due: true },
      messages: [
        {
          sourceId: 'm-1',
          author: { kind: 'contact', sourceId: 'c-100' },
          body: 'Our March invoice charges 20% VAT; we are on the reduced 5.5% rate.',
          internal: false,
          createdAt: '2024-03-01T09:30:00.000000Z',
          messageId: 'CAF1234@mail.lumenbakery.test',
          attachments: [
            {
              sourceId: 'att-1',
              fileName: 'invoice-march.pdf',
              contentType: 'application/pdf',
              size: 48213,
              url: 'https://files.northwind.test/att-1/invoice-march.pdf',
              // A file's URL is never fetched (docs/import-format.md, "Attachments").
              refused: 'The source has no host attachments are fetched from: not copied',
            },
          ],
        },
        {
          sourceId: 'm-2',
          author: { kind: 'agent', sourceId: 'u-10' },
          body: 'Checked with finance: the rate table was wrong for bakeries.',
          internal: true,
          // +01:00 made UTC.
          createdAt: '2024-03-01T10:02:44.000000Z',
          messageId: null,
          attachments: [],
        },
        {
          sourceId: 'm-3',
          author: { kind: 'agent', sourceId: 'u-10' },
          body: 'Sorry about that, Inès. A corrected invoice is attached.',
          internal: false,
          createdAt: '2024-03-02T16:05:12.250000Z',
          messageId: null,
          attachments: [
            {
              sourceId: 'att-2',
              fileName: 'invoice-march-corrected.txt',
              contentType: 'text/plain',
              size: 54,
              content: Buffer.from('Invoice INV-2024-0117 (corrected)\nVAT 5.5%: EUR 13.20\n').toString(
                'base64',
              ),
            },
          ],
        },
      ],
    });
    // No updated_at: its last message's time. No priority: null (the account's default).
    expect(tickets[1]).toMatchObject({ updatedAt: '2024-03-03T07:40:00.000000Z', priority: 'urgent' });
    expect(tickets[2]?.messages[1]?.author).toEqual({ kind: 'unknown', sourceId: null });
    expect(tickets[2]).toMatchObject({
      priority: null,
      status: 'closed',
      closedAt: '2023-11-28T00:00:00.000000Z',
      requester: { sourceId: 'c-102', email: 'sam.k@example.test' },
    });
    expect(tickets[3]?.requester).toEqual({ sourceId: null, email: 'new.buyer@example.test' });
  });

  it('reads the same in one page a phase as in small pages, and next names byte offset and line', async () => {
    const whole = await readAll(() => fileBytes(EXAMPLE));
    const small = await readAll(() => fileBytes(EXAMPLE), SMALL);
    for (const phase of IMPORT_PHASES) {
      expect(whole[phase].pages).toBe(1);
      expect(whole[phase].records).toEqual(small[phase].records);
    }
    const lines = readFileSync(EXAMPLE, 'utf8').split('\n');
    const offsetOfLine = (n: number) => Buffer.byteLength(lines.slice(0, n - 1).join('\n')) + 1;
    expect(small.agents.nexts).toEqual([3, 5, 7, 9, 11, 13].map((n) => `${offsetOfLine(n)}:${n}`));
  });

  it('leaves out tickets updated before since, and reads people whatever since says', async () => {
    const bytes = () => fileBytes(EXAMPLE);
    const since = '2024-03-03T07:40:00.000000Z';
    const tickets = await readPhase(bytes, 'tickets', {}, since);
    expect(tickets.records.map((r) => ticketOf(r).sourceId)).toEqual(['5002', '5004']);
    expect((await readPhase(bytes, 'contacts', {}, since)).records).toHaveLength(3);
  });
});

describe('bad lines', () => {
  const good = '{"type":"contact","id":"c-1","email":"a@b.test"}';
  const ticket = (fields: Record<string, unknown>) =>
    JSON.stringify({
      type: 'ticket',
      id: 't-1',
      subject: 'Hi',
      status: 'open',
      created_at: '2024-01-01T00:00:00Z',
      requester: { id: 'c-1' },
      messages: [{ id: 'm-1', body: 'Hello', created_at: '2024-01-01T00:00:00Z' }],
      ...fields,
    });
  const message = (fields: Record<string, unknown>) => ({
    id: 'm-2',
    body: 'x',
    created_at: '2024-01-01T00:00:00Z',
    ...fields,
  });
  const file = Buffer.concat([
    Buffer.from(
      [
        good,
        '{"type":"contact","id":"c-2"',
        '{"type":"customer","id":"x-1"}',
        '[1,2]',
        ticket({ subject: undefined }),
        ticket({ id: 't-2', messages: [{ id: 'm-1', body: 'a', created_at: '2024-01-01' }] }),
        '{"type":"contact","id":42,"email":"c@d.test"}',
        ticket({ id: 't-3', subject: 's'.repeat(10_000) }),
        ticket({ id: 't-4', tags: Array.from({ length: 1000 }, (_, i) => `t${i}`) }),
        ticket({ id: 't-5', messages: [message({}), message({ created_at: '1969-12-31T23:59:59Z' })] }),
        `{"type":"ticket","id":"t-6","subject":"${'y'.repeat(20_000)}"}`,
        ticket({ id: 't-8', custom_fields: { Plan: 'pro', constructor: 'x' } }),
        '{"type":"ticket","id":"t-7","subject":"caf',
      ].join('\n'),
    ),
    Buffer.from([0xc3, 0x28]),
    Buffer.from(`"}\n${good.replace('c-1', 'c-3')}\n`),
  ]);
  const limits = { maxLineBytes: 12_000, pageLines: 3, readBytes: 1000 };

  it('are error rows naming their line and field, once each, the lines around them read', async () => {
    const all = await readAll(() => memoryBytes(file).source, limits);
    expect(all.contacts.records.map((r) => (r.type === 'contacts' ? r.contact.sourceId : ''))).toEqual([
      'c-1',
      'c-3',
    ]);
    expect(all.contacts.errors).toEqual([
      { type: 'contacts', sourceId: 'c-2', reason: expect.stringMatching(/^line 2: not JSON \(/) },
      { type: 'contacts', sourceId: 'line 7', reason: expect.stringMatching(/^line 7: id: Invalid type/) },
    ]);
    expect(all.tickets.records.map((r) => ticketOf(r).sourceId)).toEqual([]);
    expect(all.tickets.errors.map((e) => [e.sourceId, e.reason])).toEqual([
      ['x-1', 'line 3: type: not one of agent, team, organization, contact, ticket'],
      ['line 4', 'line 4: type: not one of agent, team, organization, contact, ticket'],
      ['t-1', 'line 5: subject: missing'],
      [
        't-2',
        'line 6: messages.0.created_at: not an ISO 8601 time with an offset, such as 2024-03-01T09:30:00Z',
      ],
      ['t-3', expect.stringMatching(/^line 8: subject: Invalid length: Expected <=255/)],
      ['t-4', expect.stringMatching(/^line 9: tags: Invalid length: Expected <=50/)],
      ['t-5', 'line 10: messages.1.created_at: before 1970-01-01'],
      ['t-6', 'line 11: longer than the limit of 12000 bytes (20041)'],
      ['t-8', 'line 12: custom_fields: constructor: a reserved key'],
      ['t-7', 'line 13: not UTF-8'],
    ]);
    expect(all.tickets.errors.every((e) => e.type === 'tickets')).toBe(true);
    for (const phase of ['agents', 'teams', 'organizations'] as const) {
      expect(all[phase]).toMatchObject({ records: [], errors: [] });
    }
  });

  it('keep no more than the limit of an over-long line, however long it runs', async () => {
    const long = `{"type":"ticket","id":"big","subject":"${'z'.repeat(5_000_000)}"}\n${good}\n`;
    const { source, reads } = memoryBytes(long);
    const page = await ndjsonSource(source, { ...NDJSON_LIMITS, maxLineBytes: 1000 }).page(
      'tickets',
      null,
      {},
    );
    expect(page.errors).toEqual([
      { type: 'tickets', sourceId: 'big', reason: 'line 1: longer than the limit of 1000 bytes (5000041)' },
    ]);
    // 1 MiB reads, one after another from the start: the line is skipped through, not gathered; the page ends
    // after it, past its 4 MiB, and the next begins with the line after it.
    expect(reads.map(([offset]) => offset)).toEqual([0, 1, 2, 3, 4].map((n) => n * NDJSON_LIMITS.readBytes));
    expect(page.next).toBe(`${long.indexOf('\n') + 1}:2`);
    const rest = await ndjsonSource(source).page('contacts', page.next, {});
    expect(rest).toMatchObject({ records: [{ type: 'contacts' }], errors: [], next: null });
  });
});

describe('attachments (docs/import-format.md, "Attachments")', () => {
  const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0x80]);
  const b64 = bytes.toString('base64');
  const attachment = (id: string, fields: Record<string, unknown>) => ({
    id,
    file_name: `${id}.bin`,
    ...fields,
  });
  const line = (id: string, attachments: unknown[]) =>
    JSON.stringify({
      ...{ type: 'ticket', id, subject: 'Files', status: 'open', created_at: '2024-01-01T00:00:00Z' },
      requester: { id: 'c-1' },
      messages: [{ id: `m-${id}`, body: '', created_at: '2024-01-01T00:00:00Z', attachments }],
    });
  const file = [
    line('t-1', [
      attachment('ok', { content: b64, size: 8, content_type: 'image/png', url: null }),
      attachment('path', { file_name: '../../etc/passwd', content: b64 }),
      attachment('empty', { content: '' }),
      attachment('url', { url: 'https://files.example.test/a.pdf', size: 10 }),
      attachment('not-b64', { content: 'not base64!' }),
      attachment('wrapped', { content: `${b64.slice(0, 4)}\n${b64.slice(4)}` }),
      attachment('unpadded', { content: b64.replace(/=+$/, '') }),
      attachment('differs', { content: b64, size: 9 }),
      attachment('big', { content: b64, size: 26 * 1024 * 1024 }),
    ]),
    line('t-2', [attachment('both', { content: b64, url: 'https://files.example.test/a.pdf' })]),
    line('t-3', [attachment('neither', {})]),
  ].join('\n');

  it('carry their bytes as base64 content, checked when read: a URL, bad content or a wrong size refused, the ticket kept', async () => {
    const read = await readPhase(() => memoryBytes(file).source, 'tickets');
    expect(read.records.map((r) => ticketOf(r).sourceId)).toEqual(['t-1']);
    expect(read.errors).toEqual([
      {
        type: 'tickets',
        sourceId: 't-2',
        reason: 'line 2: messages.0.attachments.0: give one of content and url',
      },
      {
        type: 'tickets',
        sourceId: 't-3',
        reason: 'line 3: messages.0.attachments.0: give one of content and url',
      },
    ]);
    const found = ticketOf(read.records[0] as ImportRecord).messages[0]?.attachments ?? [];
    const named = (id: string) => found.find((a) => a.sourceId === id);
    expect(named('ok')).toEqual({
      ...{ sourceId: 'ok', fileName: 'ok.bin', contentType: 'image/png', size: 8, content: b64 },
    });
    // A name, never a path: kept as given (the store's keys are made of ids).
    expect(named('path')).toMatchObject({
      fileName: '../../etc/passwd',
      size: 8,
      contentType: 'application/octet-stream',
    });
    expect(named('empty')).toEqual({
      ...{ sourceId: 'empty', fileName: 'empty.bin', size: 0, content: '' },
      contentType: 'application/octet-stream',
    });
    expect(Object.fromEntries(found.map((a) => [a.sourceId, a.refused]))).toEqual({
      ok: undefined,
      path: undefined,
      empty: undefined,
      url: 'The source has no host attachments are fetched from: not copied',
      'not-b64': INLINE_REASONS.notBase64,
      wrapped: INLINE_REASONS.notBase64,
      unpadded: INLINE_REASONS.notBase64,
      differs: 'The attachment content is 8 bytes, but its size says 9: not copied',
      big: 'The attachment passes 25 MiB: not copied',
    });
    // Copied: decoded, byte for byte, within the limit asked; never for one refused.
    expect(Buffer.from(await INLINE_FILES.getBytes(named('ok') as ImportedAttachment, 8)).equals(bytes)).toBe(
      true,
    );
    await expect(INLINE_FILES.getBytes(named('ok') as ImportedAttachment, 7)).rejects.toThrow(SourceTooLarge);
    await expect(INLINE_FILES.getBytes(named('url') as ImportedAttachment, 8)).rejects.toThrow(
      SourceHostRefused,
    );
  });
});

describe('lines and reads', () => {
  it('joins a line split across reads, and a resumed page reads from its checkpoint on', async () => {
    const example = readFileSync(EXAMPLE);
    const expected = await readAll(() => memoryBytes(example).source);
    const pieces = await readAll(() => memoryBytes(example).source, { readBytes: 5, pageLines: 4 });
    for (const phase of IMPORT_PHASES) expect(pieces[phase].records).toEqual(expected[phase].records);

    const { source, reads } = memoryBytes(example);
    const from = pieces.tickets.nexts[1] as string;
    await ndjsonSource(source, { ...NDJSON_LIMITS, readBytes: 5 }).page('tickets', from, {});
    expect(reads[0]?.[0]).toBe(Number(from.split(':')[0]));
  });

  it('reads a CRLF file (with a byte-order mark) as the same records, and lines as long', async () => {
    const crlf = `\uFEFF${readFileSync(EXAMPLE, 'utf8').replaceAll('\n', '\r\n')}`;
    const expected = await readAll(() => fileBytes(EXAMPLE));
    const read = await readAll(() => memoryBytes(crlf).source, SMALL);
    for (const phase of IMPORT_PHASES) {
      expect(read[phase].records).toEqual(expected[phase].records);
      expect(read[phase].errors).toEqual([]);
    }
    const bad = await readPhase(() => memoryBytes('\r\n{"type":"team"}\r\n').source, 'teams');
    expect(bad.errors.map((e) => e.reason)).toEqual(['line 2: id: missing']);
    // The limit counts the line without its CRLF: a line of exactly the limit is read, one byte more is not.
    const team = (name: string) => `{"type":"team","id":"g","name":"${name}"}`;
    const limit = team('x'.repeat(100)).length;
    const atLimit = await readPhase(
      () => memoryBytes(`${team('x'.repeat(100))}\r\n${team('y'.repeat(101))}\r\n`).source,
      'teams',
      { maxLineBytes: limit, readBytes: 16 },
    );
    expect(atLimit.records).toHaveLength(1);
    expect(atLimit.errors.map((e) => e.reason)).toEqual([
      `line 2: longer than the limit of ${limit} bytes (${limit + 1})`,
    ]);
  });

  it('reads an empty file, and one of blank lines, as nothing in every phase', async () => {
    for (const content of ['', '\n\n  \r\n\t\n']) {
      for (const phase of IMPORT_PHASES) {
        const page = await ndjsonSource(memoryBytes(content).source).page(phase, null, {});
        expect(page).toEqual({ records: [], errors: [], next: null });
      }
    }
  });

  it('refuses a checkpoint that is not its own', async () => {
    await expect(ndjsonSource(memoryBytes('').source).page('tickets', 'cursor-abc', {})).rejects.toThrow(
      'not an ndjson checkpoint',
    );
  });
});
