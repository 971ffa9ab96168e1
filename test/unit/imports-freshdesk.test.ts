import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { closeSourceConnections, SourceAuthFailed } from '#lib/imports/http.ts';
import type { ImportedTicket, ImportPhase, ImportRecord, SourcePage } from '#lib/imports/records.ts';
import { type FreshdeskSourceOptions, freshdeskSource } from '#lib/imports/sources/freshdesk.ts';
import { addListed, gapIds, MAX_RANGES } from '#lib/imports/sources/freshdesk-archived.ts';
import { mapAgent } from '#lib/imports/sources/freshdesk-map.ts';
import {
  customFieldLabels,
  mapPriority,
  mapStatus,
  mapTicket,
  plainText,
} from '#lib/imports/sources/freshdesk-ticket-map.ts';
import { useManualClock } from '#test/support/clock.ts';
import { startFreshdeskServer } from '#test/support/vendors/freshdesk.ts';
import { archiveTickets, freshdeskData } from '#test/support/vendors/freshdesk-data.ts';
import { onClock, type VendorServer } from '#test/support/vendors/server.ts';

/**
 * The Freshdesk import source against a local server speaking Freshdesk's API v2 (test/support/vendors/
 * freshdesk.ts), on the manual clock: every phase read to its end, a fresh reader for each page made from nothing
 * but the last page's `next`, as a job resumed after a crash would.
 */
const API_KEY = 'fd-key-0123456789';
const clock = useManualClock();
let server: VendorServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(closeSourceConnections);

async function start(options: Partial<Parameters<typeof startFreshdeskServer>[0]> = {}) {
  server = await startFreshdeskServer({ apiKey: API_KEY, data: freshdeskData(), ...options });
  return server;
}

const drive = <T>(work: Promise<T>) => onClock(clock(), work);

const reader = (options: Partial<FreshdeskSourceOptions> = {}) =>
  freshdeskSource({
    domain: 'acme',
    apiKey: API_KEY,
    rateShare: 1,
    env: { IMPORT_FRESHDESK_URL: server?.url },
    perPage: 3,
    pageCap: 2,
    ...options,
  });

/** Every page of a phase, each read by a new reader from the previous page's `next`. */
async function readPhase(phase: ImportPhase, options: Partial<FreshdeskSourceOptions> = {}) {
  const pages: SourcePage[] = [];
  for (let from: string | null = null; pages.length === 0 || from !== null; ) {
    const page: SourcePage = await drive(reader(options).page(phase, from, {}));
    pages.push(page);
    from = page.next;
    if (pages.length > 100) throw new Error('the phase never ends');
  }
  return {
    pages,
    records: pages.flatMap((p) => p.records),
    errors: pages.flatMap((p) => p.errors),
  };
}

const ticketsOf = (records: ImportRecord[]): ImportedTicket[] =>
  records.flatMap((r) => (r.type === 'tickets' ? [r.ticket] : []));

describe('the Freshdesk source reads each phase to its end, resumed from `next` by a fresh reader each page', () => {
  it('agents, with their groups as teams, deactivated ones inactive, one without an e-mail an error row', async () => {
    await start();
    const { pages, records, errors } = await readPhase('agents');
    expect(pages).toHaveLength(2);
    expect(records).toEqual([
      {
        type: 'agents',
        agent: {
          sourceId: '1',
          email: 'agent1@acme.test',
          name: 'Agent 1',
          active: true,
          teamSourceIds: ['11'],
        },
      },
      {
        type: 'agents',
        agent: {
          sourceId: '2',
          email: 'agent2@acme.test',
          name: 'Agent 2',
          active: true,
          teamSourceIds: ['11', '12'],
        },
      },
      {
        type: 'agents',
        agent: {
          sourceId: '3',
          email: 'agent3@acme.test',
          name: 'Agent 3',
          active: false,
          teamSourceIds: [],
        },
      },
    ]);
    expect(errors).toEqual([{ type: 'agents', sourceId: '4', reason: 'the agent has no e-mail address' }]);
  });

  it('teams, organizations with their domains, contacts (one with a phone only an error row)', async () => {
    await start();
    expect((await readPhase('teams')).records.map((r) => r.type === 'teams' && r.team)).toEqual([
      { sourceId: '11', name: 'Billing' },
      { sourceId: '12', name: 'Technical' },
      { sourceId: '13', name: 'Empty' },
    ]);
    const organizations = await readPhase('organizations');
    expect(organizations.records.map((r) => r.type === 'organizations' && r.organization)).toEqual([
      { sourceId: '301', name: 'Company 301', domains: ['company301.test'] },
      { sourceId: '302', name: 'Company 302', domains: ['company302.test'] },
      { sourceId: '303', name: 'Company 303', domains: [] },
    ]);
    const contacts = await readPhase('contacts');
    expect(contacts.records).toHaveLength(4);
    expect(contacts.records[1]).toEqual({
      type: 'contacts',
      contact: {
        sourceId: '1001',
        email: 'customer1001@example.test',
        name: 'Customer 1001',
        phone: null,
        organizationSourceId: null,
      },
    });
    expect(contacts.errors).toEqual([
      { type: 'contacts', sourceId: '1004', reason: 'the contact has no e-mail address' },
    ]);
  });

  it('tickets: every one exactly once across windows past the page cap, a run sharing one second included', async () => {
    const data = freshdeskData({ count: 20, sharedRun: 5 });
    await start({ data, failEvery: 9 });
    const { pages, records } = await readPhase('tickets');
    const ids = ticketsOf(records).map((t) => Number(t.sourceId));
    expect(ids).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // More list pages than the cap allows one window (2 of 3), and never a page past it.
    const lists = (server?.requests ?? [])
      .map((r) => new URL(r.path, 'http://x'))
      .filter((url) => url.pathname === '/api/v2/tickets');
    expect(pages.length).toBeGreaterThan(2);
    expect(
      lists.every(
        (url) => Number(url.searchParams.get('page')) <= 2 && url.searchParams.get('updated_since'),
      ),
    ).toBe(true);
    // One request in nine answered 503 (the faults queued), and was asked again.
    expect(server?.requests.length).toBeGreaterThan(18);
  });

  it('tickets: a ticket updated while the import reads is read again at its new place, none skipped', async () => {
    const data = freshdeskData({ count: 12, sharedRun: 2 });
    await start({ data });
    let told = 0;
    const first = await drive(reader().page('tickets', null, { onTicket: () => told++ }));
    // Each ticket read is told: the engine's progress within a page.
    expect(told).toBe(first.records.length);
    const moved = data.tickets.find((t) => t.id === 2);
    if (moved) moved.updated_at = '2026-03-01T00:00:00Z';
    const ids = ticketsOf(first.records).map((t) => Number(t.sourceId));
    for (let from = first.next; from !== null; ) {
      const page: SourcePage = await drive(reader().page('tickets', from, {}));
      ids.push(...ticketsOf(page.records).map((t) => Number(t.sourceId)));
      from = page.next;
    }
    expect([...new Set(ids)].sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(ids.filter((id) => id === 2)).toHaveLength(2);
  });

  it('tickets: more than the page cap sharing one second is an error row, and the read goes on past it', async () => {
    await start({ data: freshdeskData({ count: 14, sharedRun: 7 }) });
    const { pages, records, errors } = await readPhase('tickets');
    const ids = ticketsOf(records).map((t) => Number(t.sourceId));
    expect(ids).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14]);
    // The checkpoint stays small however long the window stays: at most a page of the edge's ids.
    // (The ids listed ride along too, as ranges: few, and at most MAX_RANGES; the archived walk's own tests.)
    const seen = pages.map((p) => JSON.stringify(p.next === null ? {} : (JSON.parse(p.next).seen ?? {})));
    expect(Math.max(...seen.map((s) => s.length))).toBeLessThan(60);
    expect(errors).toContainEqual(
      expect.objectContaining({ type: 'tickets', sourceId: 'updated_at:2026-01-02T00:00:10Z' }),
    );
  });

  it('contacts: `since` given to the first page only is kept in `next`', async () => {
    await start();
    const since = '2026-01-02T00:00:02.000000Z';
    const ids: string[] = [];
    for (let from: string | null = null, first = true; first || from !== null; first = false) {
      const page: SourcePage = await drive(
        reader({ perPage: 1 }).page('contacts', from, first ? { since } : {}),
      );
      ids.push(...page.records.map((r) => (r.type === 'contacts' ? r.contact.sourceId : '')));
      ids.push(...page.errors.map((e) => e.sourceId));
      from = page.next;
    }
    expect(ids).toEqual(['1002', '1003', '1004']);
  });

  it('tickets: a cap lower than the reader knows (a 400 past it) is the same error row, the read going on', async () => {
    await start({ data: freshdeskData({ count: 14, sharedRun: 7 }), pageCap: 2 });
    const { records, errors } = await readPhase('tickets', { pageCap: 300 });
    expect(ticketsOf(records).map((t) => Number(t.sourceId))).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14,
    ]);
    expect(errors).toContainEqual(
      expect.objectContaining({ type: 'tickets', sourceId: 'updated_at:2026-01-02T00:00:10Z' }),
    );
  });

  it('tickets: `since` reads only what changed since', async () => {
    await start();
    const { records } = await readPhase('tickets', { since: '2026-01-02T00:00:20.000000Z' });
    expect(ticketsOf(records).map((t) => t.sourceId)).toEqual([
      '10',
      '11',
      '12',
      '13',
      '14',
      '15',
      '16',
      '17',
      '18',
      '19',
      '20',
    ]);
  });
});

describe("the Freshdesk source's archived tickets: the gaps in the ids listed, each probed by id", () => {
  const probed = () =>
    (server?.requests ?? [])
      .map((r) => /^\/api\/v2\/tickets\/archived\/(\d+)$/.exec(r.path)?.[1])
      .filter((id) => id !== undefined)
      .map(Number);

  it('a full run reads each archived ticket once, closed, with its conversations, probing only the gaps', async () => {
    // 2, 5 and 6 archived, 9 deleted (a gap that answers 404): the list gives 8 of 12.
    await start({ data: archiveTickets(freshdeskData({ count: 12, sharedRun: 2 }), [2, 5, 6], [9]) });
    const { pages, records, errors } = await readPhase('tickets');
    const tickets = ticketsOf(records);
    expect(tickets.map((t) => Number(t.sourceId)).sort((a, b) => a - b)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12,
    ]);
    expect(probed()).toEqual([2, 5, 6, 9]);
    for (const id of ['2', '5', '6']) {
      const ticket = tickets.find((t) => t.sourceId === id);
      expect(ticket).toMatchObject({ status: 'closed', subject: `Ticket ${id}` });
      expect(ticket?.closedAt).not.toBeNull();
      expect(ticket?.messages.map((m) => m.sourceId)).toEqual([`ticket-${id}`, `${Number(id) * 100 + 1}`]);
    }
    // Ticket 1's conversation with no valid time is its one error row (none for a gap that was no ticket).
    expect(errors.map((e) => e.sourceId)).toEqual(['105']);
    // The walk is paged (3 probes a page here), each page's `next` the id after the last probed.
    const walks = pages.flatMap((p) => (p.next?.includes('"walk"') ? [JSON.parse(p.next).walk] : []));
    expect(walks).toEqual([1, 7]);
  });

  it('a `since` run walks nothing (an archived ticket no longer changes)', async () => {
    await start({ data: archiveTickets(freshdeskData({ count: 12, sharedRun: 2 }), [2, 5, 6]) });
    await readPhase('tickets', { since: '2026-01-02T00:00:01.000000Z' });
    expect(probed()).toEqual([]);
  });

  it("a probe honours a 429's Retry-After; a 403 on the archive is one error row and the walk's end", async () => {
    await start({ data: archiveTickets(freshdeskData({ count: 6, sharedRun: 0 }), [2, 4]) });
    const walk = JSON.stringify({
      walk: 1,
      top: 6,
      ids: [
        [1, 1],
        [3, 3],
        [5, 6],
      ],
    });
    // The ticket fields, then a 429 on the probe of 2, then 2 and its conversations, then a 403 on the probe of 4.
    server?.faults.push(null, { status: 429, headers: { 'retry-after': '7' } }, null, null, { status: 403 });
    let told = 0;
    const page = await drive(reader().page('tickets', walk, { onTicket: () => told++ }));
    expect(ticketsOf(page.records).map((t) => t.sourceId)).toEqual(['2']);
    // The archived ticket read is told (the engine's progress within a page); a probe answered 404 or 403 is not.
    expect(told).toBe(1);
    expect(page.errors).toEqual([
      expect.objectContaining({
        type: 'tickets',
        sourceId: 'archived:4',
        reason: expect.stringContaining('403'),
      }),
    ]);
    expect(page.next).toBeNull();
    const [throttled, retried] = (server?.requests ?? []).filter(
      (r) => r.path === '/api/v2/tickets/archived/2',
    );
    expect(retried && throttled && retried.at - throttled.at).toBeGreaterThanOrEqual(7_000);
  });

  it(`keeps the listed ids as ranges, at most ${MAX_RANGES}: past it the shortest is probed instead`, () => {
    const listed = addListed(
      { ids: [], top: 0 },
      [3, 1, 2, 7, 9, 10, 'x', -4].map((id) => ({ id })),
    );
    expect(listed).toEqual({
      ids: [
        [1, 3],
        [7, 7],
        [9, 10],
      ],
      top: 10,
    });
    expect(gapIds({ walk: 1, ...listed }, 100)).toEqual([4, 5, 6, 8]);
    expect(gapIds({ walk: 5, ...listed }, 2)).toEqual([5, 6]);
    // Every other id listed: more ranges than kept; the ones dropped are walked (never an id skipped unlisted).
    const scattered = addListed(
      listed,
      Array.from({ length: 2 * MAX_RANGES }, (_, i) => ({ id: 20 + 2 * i })),
    );
    expect(scattered.ids).toHaveLength(MAX_RANGES);
    const gaps = new Set(gapIds({ walk: 1, ...scattered }, 10_000));
    for (let id = 1; id <= scattered.top; id++)
      if (id === 4 || id === 8 || (id > 10 && id % 2 === 1)) expect(gaps.has(id)).toBe(true);
  });
});

describe('the Freshdesk mapping', () => {
  it('maps statuses 2/3/4/5 to open, pending, resolved, closed; a custom status (6 and up) to open', () => {
    expect([2, 3, 4, 5, 6, 17, undefined].map(mapStatus)).toEqual([
      'open',
      'pending',
      'resolved',
      'closed',
      'open',
      'open',
      'open',
    ]);
  });

  it('maps priorities 1/2/3/4 to low, medium, high, urgent; none to the account default (null)', () => {
    expect([1, 2, 3, 4, 0, null].map(mapPriority)).toEqual(['low', 'medium', 'high', 'urgent', null, null]);
  });

  it('reads ticket 1 whole: description first, conversations in order, custom fields by label, attachments', async () => {
    await start();
    const { records, errors } = await readPhase('tickets');
    const [first] = ticketsOf(records);
    expect(first).toEqual({
      sourceId: '1',
      subject: 'Ticket 1',
      status: 'pending',
      priority: 'medium',
      createdAt: '2026-01-01T22:36:41.000000Z',
      updatedAt: '2026-01-02T00:00:00.000000Z',
      resolvedAt: null,
      closedAt: null,
      tags: ['billing', 'vip'],
      requester: { sourceId: '1001', email: 'customer1001@example.test' },
      assigneeSourceId: '2',
      teamSourceId: '11',
      organizationSourceId: null,
      customFields: { order_number: 'ORD-1', vip: true },
      messages: [
        expect.objectContaining({
          sourceId: 'ticket-1',
          author: { kind: 'contact', sourceId: '1001' },
          body: 'Help with 1',
          internal: false,
          attachments: [
            {
              sourceId: '9001',
              fileName: 'invoice.pdf',
              contentType: 'application/pdf',
              size: 2048,
              url: 'https://s3.amazonaws.com/cdn.freshdesk.com/data/helpdesk/attachments/9001/invoice.pdf',
            },
          ],
        }),
        expect.objectContaining({
          sourceId: '101',
          author: { kind: 'contact', sourceId: '1001' },
          internal: false,
        }),
        expect.objectContaining({
          sourceId: '102',
          author: { kind: 'agent', sourceId: '2' },
          internal: true,
        }),
        expect.objectContaining({
          sourceId: '103',
          body: 'Reply 3 on 1',
          createdAt: '2026-01-01T22:53:23.000000Z',
          messageId: null,
          attachments: [expect.objectContaining({ sourceId: '9002', fileName: 'screenshot.png', size: 512 })],
        }),
        expect.objectContaining({ sourceId: '104', author: { kind: 'contact', sourceId: '1001' } }),
      ],
    });
    // The fifth conversation's time is no time: an error row, the ticket and the rest kept.
    expect(errors).toEqual([
      { type: 'messages', sourceId: '105', reason: 'conversation 105: created_at is not a time after 1970' },
    ]);
    expect(ticketsOf(records).find((t) => t.sourceId === '3')).toMatchObject({
      status: 'closed',
      priority: 'urgent',
      closedAt: '2026-01-01T23:59:10.000000Z',
      assigneeSourceId: null,
    });
  });

  it("keys a nested field's levels by their own labels (its dependent_fields)", () => {
    const fields = [
      { name: 'status', label: 'Status', default: true },
      {
        name: 'cf_country',
        label: 'Country',
        default: false,
        type: 'nested_field',
        dependent_fields: [
          { name: 'cf_state', label: 'State / Province', level: 2 },
          { name: 'cf_city', label: 'City', level: 3 },
        ],
      },
    ];
    expect(customFieldLabels(fields)).toEqual({
      cf_country: 'Country',
      cf_state: 'State / Province',
      cf_city: 'City',
    });
  });

  it('a ticket deleted between the list and its own read is an error row, the rest read', async () => {
    await start({ data: freshdeskData({ count: 3, sharedRun: 0 }) });
    // The ticket fields, the list, then ticket 1's own read: gone.
    server?.faults.push(null, null, { status: 404, body: { code: 'not_found' } });
    const { records, errors } = await readPhase('tickets');
    expect(ticketsOf(records).map((t) => t.sourceId)).toEqual(['2', '3']);
    expect(errors).toEqual([
      { type: 'tickets', sourceId: '1', reason: 'the source answered HTTP 404 for /api/v2/tickets/1' },
    ]);
  });

  it("a body without its text version is its HTML without the tags, a script's tags included", () => {
    expect(plainText('Hello', '<b>Hello</b>')).toBe('Hello');
    expect(plainText(undefined, '<div>Hi <script>alert(1)</script><img src=x onerror=y</div>')).toBe(
      'Hi alert(1)',
    );
    expect(plainText(null, null)).toBe('');
  });

  it('an agent marked deactivated is inactive even with an active contact', () => {
    const contact = { active: true, email: 'gone@acme.test', name: 'Gone' };
    expect(mapAgent({ id: 5, deactivated: true, contact }, new Map())).toMatchObject({
      value: { active: false },
    });
    expect(mapAgent({ id: 5, deactivated: false, contact }, new Map())).toMatchObject({
      value: { active: true },
    });
  });

  it('a ticket that cannot be mapped is an error row, never a thrown error', () => {
    const mapped = mapTicket(
      { ticket: { id: 7, created_at: '1969-12-31T00:00:00Z' }, details: {}, conversations: [] },
      {},
    );
    expect(mapped).toEqual({ ok: false, reason: 'created_at or updated_at is not a time after 1970' });
  });
});

describe("the Freshdesk source under the API's limits", () => {
  it("honours a 429's Retry-After: no request before it has elapsed", async () => {
    await start();
    server?.faults.push({ status: 429, headers: { 'retry-after': '7' }, body: { message: 'rate limited' } });
    const { records } = await readPhase('teams');
    expect(records).toHaveLength(3);
    const [throttled, retried] = server?.requests ?? [];
    expect(retried && throttled && retried.at - throttled.at).toBeGreaterThanOrEqual(7_000);
  });

  it('fails at once on 401 (a bad API key), with one request sent', async () => {
    await start();
    await expect(drive(reader({ apiKey: 'wrong' }).page('agents', null, {}))).rejects.toBeInstanceOf(
      SourceAuthFailed,
    );
    expect(server?.requests).toHaveLength(1);
  });

  it('keeps to the share of the stated limit: at 60 a minute and half of it, a request every 2 s', async () => {
    await start({ ratePerMinute: 60 });
    // One reader for the whole phase, as a job's run keeps it: its pacing spans the pages.
    const teams = reader({ rateShare: 0.5, perPage: 1 });
    for (let from: string | null = null, pages = 0; pages === 0 || from !== null; pages++)
      from = (await drive(teams.page('teams', from, {}))).next;
    expect(server?.requests).toHaveLength(3);
    // From the first answer on (it states the 60; the first gap is paced at the published 200).
    const times = server?.requests.map((r) => r.at) ?? [];
    const gaps = times.slice(2).map((at, i) => at - (times[i + 1] as number));
    expect(gaps.length > 0 && gaps.every((gap) => gap >= 2_000)).toBe(true);
  });

  it("lists contacts at half the lists' own 20 a minute, whatever the account's stated limit", async () => {
    await start({ ratePerMinute: 700 });
    const contacts = reader({ rateShare: 0.5, perPage: 1 });
    for (let from: string | null = null, pages = 0; pages === 0 || from !== null; pages++)
      from = (await drive(contacts.page('contacts', from, {}))).next;
    const times = server?.requests.map((r) => r.at) ?? [];
    expect(times).toHaveLength(5);
    const gaps = times.slice(1).map((at, i) => at - (times[i] as number));
    expect(gaps.every((gap) => gap >= 6_000)).toBe(true);
  });
});
