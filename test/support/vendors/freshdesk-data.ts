import type { FreshdeskData } from './freshdesk.ts';

/**
 * A small made-up Freshdesk helpdesk in the API v2's documented shapes, for the local server
 * (test/support/vendors/freshdesk.ts): agents in groups (one deactivated, one without an e-mail), companies,
 * contacts (one with a phone only), ticket fields, and `count` tickets whose `updated_at` come in runs that share one
 * second (`sharedRun` of them at 2026-01-02T00:00:10Z), each with conversations.
 */
export const FRESHDESK_START = Date.parse('2026-01-02T00:00:00Z');

const at = (seconds: number) => `${new Date(FRESHDESK_START + seconds * 1000).toISOString().slice(0, 19)}Z`;

/** Seconds after FRESHDESK_START of ticket `i` (1-based): a few alone, a run sharing one second, pairs after. */
export function ticketSecond(i: number, sharedRun: number): number {
  if (i <= 4) return [0, 1, 1, 2][i - 1] as number;
  if (i <= 4 + sharedRun) return 10;
  return 20 + Math.floor((i - 5 - sharedRun) / 2);
}

export function freshdeskData({ count = 20, sharedRun = 5 } = {}): FreshdeskData {
  const contact = (id: number, more: Record<string, unknown> = {}) => ({
    id,
    name: `Customer ${id}`,
    email: `customer${id}@example.test`,
    phone: null,
    mobile: null,
    company_id: id % 2 === 0 ? 301 : null,
    active: true,
    created_at: at(-1000),
    updated_at: at(-1000 + id),
    ...more,
  });
  const tickets = Array.from({ length: count }, (_, n) => {
    const id = n + 1;
    return {
      id,
      subject: `Ticket ${id}`,
      description: `<div>Help with ${id}</div>`,
      description_text: `Help with ${id}`,
      status: [2, 3, 4, 5, 6][id % 5],
      priority: [1, 2, 3, 4][id % 4],
      source: 1,
      requester_id: 1000 + (id % 4),
      responder_id: id % 3 === 0 ? null : 2,
      group_id: 11,
      company_id: id % 2 === 0 ? 301 : null,
      tags: id === 1 ? ['billing', 'vip'] : [],
      custom_fields: { cf_order_number: `ORD-${id}`, cf_vip: id === 1 },
      created_at: at(-5000 + id),
      updated_at: at(ticketSecond(id, sharedRun)),
      due_by: at(100_000),
      stats: {
        resolved_at: id % 5 === 2 ? at(-100) : null,
        closed_at: id % 5 === 3 ? at(-50) : null,
        first_responded_at: null,
      },
      attachments:
        id === 1
          ? [
              {
                id: 9001,
                name: 'invoice.pdf',
                content_type: 'application/pdf',
                size: 2048,
                attachment_url:
                  'https://s3.amazonaws.com/cdn.freshdesk.com/data/helpdesk/attachments/9001/invoice.pdf',
                created_at: at(-5000),
                updated_at: at(-5000),
              },
            ]
          : [],
    };
  });
  const conversation = (ticket: number, n: number, more: Record<string, unknown>) => ({
    id: ticket * 100 + n,
    body: `<div>Reply ${n} on ${ticket}</div>`,
    body_text: `Reply ${n} on ${ticket}`,
    incoming: false,
    private: false,
    user_id: 2,
    support_email: 'support@acme.test',
    source: 0,
    ticket_id: ticket,
    to_emails: [],
    from_email: null,
    cc_emails: [],
    bcc_emails: [],
    attachments: [],
    created_at: at(-4000 + n),
    updated_at: at(-4000 + n),
    ...more,
  });
  const conversations = new Map(
    tickets.map((t) => [
      t.id,
      t.id === 1
        ? [
            conversation(1, 1, { incoming: true, user_id: 1001, source: 0 }),
            conversation(1, 2, { private: true, source: 2 }),
            conversation(1, 3, {
              attachments: [
                {
                  id: 9002,
                  name: 'screenshot.png',
                  content_type: 'image/png',
                  size: 512,
                  attachment_url:
                    'https://s3.amazonaws.com/cdn.freshdesk.com/data/helpdesk/attachments/9002/s.png',
                },
              ],
            }),
            conversation(1, 4, { incoming: true, user_id: 1001 }),
            conversation(1, 5, { created_at: 'not a time' }),
          ]
        : [conversation(t.id, 1, { incoming: true, user_id: t.requester_id })],
    ]),
  );
  return {
    groups: [
      { id: 11, name: 'Billing', agent_ids: [1, 2], created_at: at(-9000), updated_at: at(-9000) },
      { id: 12, name: 'Technical', agent_ids: [2], created_at: at(-9000), updated_at: at(-9000) },
      { id: 13, name: 'Empty', agent_ids: [], created_at: at(-9000), updated_at: at(-9000) },
    ],
    agents: [1, 2, 3, 4].map((id) => ({
      id,
      available: id !== 2,
      occasional: false,
      ticket_scope: 1,
      created_at: at(-9000),
      updated_at: at(-9000),
      contact: {
        active: id !== 3,
        email: id === 4 ? null : `agent${id}@acme.test`,
        name: `Agent ${id}`,
        phone: null,
      },
    })),
    companies: [301, 302, 303].map((id) => ({
      id,
      name: `Company ${id}`,
      domains: id === 303 ? [] : [`company${id}.test`],
      created_at: at(-9000),
      updated_at: at(-9000),
    })),
    contacts: [
      contact(1000),
      contact(1001),
      contact(1002),
      contact(1003),
      contact(1004, { email: null, phone: '+15550100' }),
    ],
    tickets,
    conversations,
    ticketFields: [
      { id: 1, name: 'requester', label: 'Search a requester', default: true, type: 'default_requester' },
      { id: 2, name: 'status', label: 'Status', default: true, type: 'default_status' },
      { id: 3, name: 'cf_order_number', label: 'Order number', default: false, type: 'custom_text' },
      { id: 4, name: 'cf_vip', label: 'VIP?', default: false, type: 'custom_checkbox' },
    ],
  };
}

/**
 * `data` with the tickets `archived` moved out of the lists into the archive (closed, as Freshdesk archives only
 * closed tickets) and the tickets `deleted` gone from both (their ids gaps that answer 404 everywhere).
 */
export function archiveTickets(
  data: FreshdeskData,
  archived: number[],
  deleted: number[] = [],
): FreshdeskData {
  const gone = new Set([...archived, ...deleted]);
  const moved = data.tickets.filter((t) => archived.includes(Number(t.id)));
  return {
    ...data,
    tickets: data.tickets.filter((t) => !gone.has(Number(t.id))),
    archived: moved.map((t) => ({ ...t, status: 5 })),
  };
}
