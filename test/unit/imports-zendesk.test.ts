import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  closeSourceConnections,
  SourceAuthFailed,
  SourceHostRefused,
  SourceUnavailable,
} from '#lib/imports/http.ts';
import type {
  ImportErrorRow,
  ImportedTicket,
  ImportPhase,
  ImportRecord,
  SourcePage,
} from '#lib/imports/records.ts';
import { type ZendeskSourceOptions, zendeskSource } from '#lib/imports/sources/zendesk.ts';
import { customFieldsOf, mapTicket } from '#lib/imports/sources/zendesk-map.ts';
import { formatTimestamp } from '#lib/time.ts';
import { useManualClock } from '#test/support/clock.ts';
import { onClock } from '#test/support/vendors/server.ts';
import {
  startZendesk,
  ZENDESK_EMAIL,
  ZENDESK_TOKEN,
  type ZendeskServer,
} from '#test/support/vendors/zendesk.ts';

const clockNow = useManualClock();
let zendesk: ZendeskServer;

beforeEach(async () => {
  zendesk = await startZendesk();
});
afterEach(async () => {
  closeSourceConnections();
  await zendesk.close();
});

const source = (options: Partial<ZendeskSourceOptions> = {}) =>
  zendeskSource({
    subdomain: 'acme',
    email: ZENDESK_EMAIL,
    apiToken: ZENDESK_TOKEN,
    env: { IMPORT_ZENDESK_URL: zendesk.url },
    ...options,
  });

/** Reads a phase to its end, a fresh reader for each page (as a job resumed in another process would). */
async function readPhase(phase: ImportPhase, options: Partial<ZendeskSourceOptions> = {}) {
  const records: ImportRecord[] = [];
  const errors: ImportErrorRow[] = [];
  let pages = 0;
  for (let from: string | null = null; ; ) {
    const page: SourcePage = await onClock(clockNow(), source(options).page(phase, from, {}));
    records.push(...page.records);
    errors.push(...page.errors);
    pages++;
    if (page.next === null) return { records, errors, pages };
    from = page.next;
  }
}

const ts = (iso: string) => `${iso.slice(0, 19)}.000000Z`;
const tickets = (records: ImportRecord[]) =>
  records.flatMap((r) => (r.type === 'tickets' ? [r.ticket] : [])) as ImportedTicket[];

describe('the Zendesk source, each phase read to its end from its checkpoints', () => {
  it('agents: agents and admins, suspended ones inactive, with their group memberships as teams', async () => {
    const { records, errors, pages } = await readPhase('agents');
    expect(pages).toBe(2);
    expect(errors).toEqual([]);
    expect(records).toEqual([
      {
        type: 'agents',
        agent: {
          sourceId: '11',
          email: 'ada@acme.test',
          name: 'Ada Admin',
          active: true,
          teamSourceIds: ['301'],
        },
      },
      {
        type: 'agents',
        agent: {
          sourceId: '12',
          email: 'bo@acme.test',
          name: 'Bo Agent',
          active: true,
          teamSourceIds: ['301', '302'],
        },
      },
      {
        type: 'agents',
        agent: {
          sourceId: '13',
          email: 'cy@acme.test',
          name: 'Cy Suspended',
          active: false,
          teamSourceIds: [],
        },
      },
    ]);
  });

  it('teams and organizations: groups (deleted ones left out) and organizations with their domains', async () => {
    const teams = await readPhase('teams');
    expect(teams.pages).toBe(2);
    expect(teams.records).toEqual([
      { type: 'teams', team: { sourceId: '301', name: 'Support' } },
      { type: 'teams', team: { sourceId: '302', name: 'Billing' } },
    ]);
    const organizations = await readPhase('organizations');
    expect(organizations.pages).toBe(2);
    expect(organizations.records).toEqual([
      {
        type: 'organizations',
        organization: { sourceId: '501', name: 'Customer Inc', domains: ['customer.test'] },
      },
      {
        type: 'organizations',
        organization: { sourceId: '502', name: 'Mail Users', domains: ['gmail.com', 'example.org'] },
      },
      { type: 'organizations', organization: { sourceId: '503', name: 'No Domains', domains: [] } },
    ]);
  });

  it('contacts: end users of the user export; one without an e-mail address an error row, deleted ones left out', async () => {
    const { records, errors, pages } = await readPhase('contacts');
    expect(pages).toBe(3);
    expect(records).toEqual([
      {
        type: 'contacts',
        contact: {
          sourceId: '21',
          email: 'dee@customer.test',
          name: 'Dee Customer',
          phone: '+15550100',
          organizationSourceId: '501',
        },
      },
      {
        type: 'contacts',
        contact: {
          sourceId: '22',
          email: 'eve@customer.test',
          name: 'Eve Customer',
          phone: null,
          organizationSourceId: null,
        },
      },
    ]);
    expect(errors).toEqual([
      { type: 'contacts', sourceId: '23', reason: 'the end user has no e-mail address' },
    ]);
    expect(zendesk.requests[0]?.path).toBe('/api/v2/incremental/users/cursor.json?start_time=0');
  });

  it('tickets: status, priority, times and custom fields mapped, each with its whole conversation', async () => {
    const { records, errors, pages } = await readPhase('tickets');
    expect(pages).toBe(3);
    const read = tickets(records);
    expect(read.map((t) => [t.sourceId, t.status, t.priority, t.resolvedAt, t.closedAt])).toEqual([
      ['1001', 'open', 'low', null, null],
      ['1002', 'open', 'medium', null, null],
      ['1003', 'pending', 'high', null, null],
      ['1004', 'in_progress', 'urgent', null, null],
      ['1005', 'resolved', null, ts('2024-02-05T08:30:00Z'), null],
      ['1006', 'closed', 'medium', ts('2024-02-01T12:00:00Z'), ts('2024-02-06T09:00:00Z')],
    ]);
    expect(errors).toEqual([
      { type: 'messages', sourceId: '10014', reason: 'the comment has no valid time (or one before 1970)' },
      { type: 'tickets', sourceId: '1008', reason: 'the ticket has no valid created_at' },
    ]);
    const [first] = read;
    expect({ ...first, messages: undefined }).toEqual({
      sourceId: '1001',
      subject: 'Ticket 1001',
      status: 'open',
      priority: 'low',
      createdAt: ts('2024-02-01T09:00:00Z'),
      updatedAt: ts('2024-02-01T09:05:00Z'),
      resolvedAt: null,
      closedAt: null,
      tags: ['enterprise'],
      requester: { sourceId: '21', email: 'dee@customer.test' },
      assigneeSourceId: '12',
      teamSourceId: '301',
      organizationSourceId: '501',
      customFields: { order_number: '745', refund_requested: true, products: 'widget, gadget' },
      messages: undefined,
    });
    expect(first?.messages).toEqual([
      {
        sourceId: '10010',
        author: { kind: 'contact', sourceId: '21' },
        body: 'The printer is on fire.',
        internal: false,
        createdAt: ts('2024-02-01T09:00:00Z'),
        messageId: 'CAF=abc123@mail.customer.test',
        attachments: [
          {
            sourceId: '498483',
            fileName: 'fire.png',
            contentType: 'image/png',
            size: 2532,
            url: 'https://acme.zendesk.com/attachments/token/tyBq1ms40dFaHefSIigxZpwGg/?name=fire.png',
          },
        ],
      },
      {
        sourceId: '10011',
        author: { kind: 'agent', sourceId: '12' },
        body: 'Internal: call the fire brigade.',
        internal: true,
        createdAt: ts('2024-02-01T09:02:00Z'),
        messageId: null,
        attachments: [],
      },
      {
        sourceId: '10012',
        author: { kind: 'agent', sourceId: '12' },
        body: 'We are on it.',
        internal: false,
        createdAt: ts('2024-02-01T09:03:00Z'),
        messageId: null,
        attachments: [],
      },
      {
        sourceId: '10013',
        author: { kind: 'unknown', sourceId: '999' },
        body: 'From a deleted user.',
        internal: false,
        createdAt: ts('2024-02-01T09:04:00Z'),
        messageId: null,
        attachments: [],
      },
    ]);
    expect(read.every((t) => t.messages.length >= 1)).toBe(true);
    // The deleted ticket was asked to be left out, and its comments never asked for.
    expect(zendesk.requests.every((r) => !r.path.includes('1007'))).toBe(true);
    expect(zendesk.requests[0]?.path).toContain('exclude_deleted=true');
  });

  it('since: the exports start at its time (the cutover pass)', async () => {
    const { records } = await readPhase('tickets', { since: '2024-02-04T00:00:00.000000Z' });
    expect(tickets(records).map((t) => t.sourceId)).toEqual(['1004', '1005', '1006']);
    expect(zendesk.requests[0]?.path).toMatch(/start_time=1707004800&/);

    // Zendesk refuses a start_time within the last minute: a since that recent starts two minutes back.
    zendesk.requests.length = 0;
    const nowSeconds = Math.floor(clockNow().nowMs() / 1000);
    await readPhase('contacts', { since: formatTimestamp(clockNow().nowUs() - 5_000_000) });
    expect(zendesk.requests[0]?.path).toBe(
      `/api/v2/incremental/users/cursor.json?start_time=${nowSeconds - 120}`,
    );
  });
});

describe('the Zendesk source against a source that misbehaves', () => {
  it("honours a 429's Retry-After: no request before it has elapsed", async () => {
    zendesk.faults.push(null, { status: 429, headers: { 'Retry-After': '30' } });
    const { records } = await readPhase('teams');
    expect(records).toHaveLength(2);
    const [, limited, again] = zendesk.requests;
    expect(again?.path).toBe(limited?.path);
    expect((again?.at ?? 0) - (limited?.at ?? 0)).toBe(30_000);
  });

  it("paces at half the rates: the exports at 5 a minute whatever the answers state, the rest at half the account's", async () => {
    zendesk.headers['X-Rate-Limit'] = '700';
    const reader = source();
    let told = 0;
    for (let from: string | null = null; ; ) {
      const page: SourcePage = await onClock(
        clockNow(),
        reader.page('tickets', from, { onTicket: () => told++ }),
      );
      if (page.next === null) break;
      from = page.next;
    }
    // Each ticket read (its comments fetched) is told: the engine's progress within a page.
    expect(told).toBe(zendesk.data.tickets.filter((t) => t.status !== 'deleted').length);
    const exportsAt = zendesk.requests.filter((r) => r.path.includes('/incremental/')).map((r) => r.at);
    expect(exportsAt.slice(1).map((t, i) => t - (exportsAt[i] ?? 0))).toEqual([12_000, 12_000]);
    const apiAt = zendesk.requests.filter((r) => !r.path.includes('/incremental/')).map((r) => r.at);
    const gaps = apiAt.slice(1).map((t, i) => t - (apiAt[i] ?? 0));
    // 700 a minute at half: one every 171.4 ms (the first at the published 200's half, 600 ms).
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(171);
    expect(gaps.filter((gap) => gap < 600).length).toBeGreaterThan(5);
  });

  it('fails at once with SourceAuthFailed on a bad token, the token in no message', async () => {
    const error = await onClock(
      clockNow(),
      source({ apiToken: 'wrong-token-Qx9' }).page('agents', null, {}),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SourceAuthFailed);
    expect(zendesk.requests).toHaveLength(1);
    const said = `${String(error)} ${(error as Error).stack}`;
    expect(said).not.toContain('wrong-token-Qx9');
    expect(said).not.toContain(Buffer.from(`${ZENDESK_EMAIL}/token:wrong-token-Qx9`).toString('base64'));
  });

  it('asks again after 5xx answers and a page slower than the timeout, and reads the same records', async () => {
    zendesk.faults.push({ status: 500 }, null, { status: 503 }, { delayMs: 45_000 });
    const { records } = await readPhase('organizations');
    expect(records.map((r) => (r.type === 'organizations' ? r.organization.sourceId : null))).toEqual([
      '501',
      '502',
      '503',
    ]);
    expect(zendesk.requests).toHaveLength(5);
  });

  it('makes an error row of a ticket whose comments answer 404 (deleted between two reads), and reads on', async () => {
    delete zendesk.data.comments['1002'];
    const { records, errors } = await readPhase('tickets');
    expect(tickets(records).map((t) => t.sourceId)).toEqual(['1001', '1003', '1004', '1005', '1006']);
    expect(errors).toContainEqual({
      type: 'tickets',
      sourceId: '1002',
      reason: 'its comments could not be read (HTTP 404)',
    });
  });

  it('pauses (SourceUnavailable) on a page without what the API documents, never taking it for the end', async () => {
    for (const [phase, body] of [
      ['teams', { meta: { has_more: false } }],
      ['teams', { groups: [], meta: { has_more: true }, links: {} }],
      ['tickets', { tickets: [], after_cursor: null }],
      ['tickets', { tickets: [], end_of_stream: false, after_cursor: '' }],
    ] as const) {
      zendesk.faults.push({ status: 200, body });
      const read = onClock(clockNow(), source().page(phase, null, {}));
      await expect(read, JSON.stringify(body)).rejects.toBeInstanceOf(SourceUnavailable);
    }
  });

  it("refuses a next page on another host than the source's, sending nothing there", async () => {
    zendesk.linkOrigin = 'http://evil.test';
    const first = await onClock(clockNow(), source().page('teams', null, {}));
    expect(first.next).toMatch(/^http:\/\/evil\.test\//);
    await expect(onClock(clockNow(), source().page('teams', first.next, {}))).rejects.toBeInstanceOf(
      SourceHostRefused,
    );
    expect(zendesk.requests).toHaveLength(1);
  });
});

describe('the Zendesk mapping', () => {
  const context = { fieldTitles: new Map(), solvedAt: new Map(), comments: [], roles: new Map() };
  const ticket = (more: Record<string, unknown>) =>
    mapTicket(
      { id: 7, created_at: '2024-02-01T09:00:00Z', updated_at: '2024-02-01T10:00:00Z', ...more },
      context,
    ).mapped;

  it('maps every status and priority of Zendesk, and makes an error row of any other', () => {
    const statuses = ['new', 'open', 'pending', 'hold', 'solved', 'closed'].map((status) => {
      const mapped = ticket({ status, priority: 'normal' });
      return 'value' in mapped ? mapped.value.status : mapped;
    });
    expect(statuses).toEqual(['open', 'open', 'pending', 'in_progress', 'resolved', 'closed']);
    const priorities = ['low', 'normal', 'high', 'urgent', null, undefined].map((priority) => {
      const mapped = ticket({ status: 'open', priority });
      return 'value' in mapped ? mapped.value.priority : mapped;
    });
    expect(priorities).toEqual(['low', 'medium', 'high', 'urgent', null, null]);
    expect(ticket({ status: 'frozen' })).toEqual({
      error: { type: 'tickets', sourceId: '7', reason: 'unknown status frozen' },
    });
    expect(ticket({ status: 'open', priority: 'critical' })).toEqual({
      error: { type: 'tickets', sourceId: '7', reason: 'unknown priority critical' },
    });
    expect(ticket({ status: 'deleted' })).toEqual({ skip: true });
  });

  it("keys custom fields by their field's title, leaving out fields it has no title for", () => {
    const titles = new Map([
      ['1', 'Order Number'],
      ['2', '  Été / Spend (€)  '],
      ['3', 'x'.repeat(80)],
    ]);
    const values = [
      { id: 1, value: 42 },
      { id: 2, value: null },
      { id: 3, value: ['a', 'b'] },
      { id: 4, value: 'no title' },
      { id: 1.5, value: 'not an id' },
    ];
    expect(customFieldsOf(values, titles)).toEqual({
      order_number: 42,
      t_spend: null,
      ['x'.repeat(64)]: 'a, b',
    });
  });
});
