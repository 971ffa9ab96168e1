import * as v from 'valibot';
import { AGENT_STATUSES, PRIORITIES } from '#lib/accounts/types.ts';
import { EVENT_ID_PATTERN } from '#lib/data/events.ts';
import { ENDPOINT_ID_PATTERN } from '#lib/data/webhooks/endpoint-ids.ts';
import { INBOUND_OUTCOMES } from '#lib/email/outcomes.ts';
import { IMPORT_ID_PATTERN } from '#lib/imports/job-schemas.ts';
import { IMPORT_SOURCES, IMPORT_TYPES } from '#lib/imports/records.ts';
import { SKIP_REASONS } from '#lib/rules/actions.ts';
import { MESSAGE_ID_PATTERN, MESSAGE_VISIBILITIES } from '#lib/tickets/messages/message.ts';
import { CHANNELS, TICKET_STATUSES } from '#lib/tickets/types.ts';
import { Macro, Rule } from './rule-schemas.ts';

/**
 * What the API answers, as schemas for the OpenAPI document (infra/openapi/document.ts). Objects are strict:
 * the HTTP tests validate every answer they receive against the document (test/support/contract.ts), so a
 * presenter that adds, drops or retypes a field fails a test until this file says so too.
 */
const timestamp = v.pipe(v.string(), v.isoTimestamp(), v.description('ISO 8601, UTC, microseconds.'));
const uuid = v.pipe(v.string(), v.uuid());
const id = v.pipe(v.number(), v.integer(), v.minValue(1));
const nullable = <T extends v.GenericSchema>(schema: T) => v.nullable(schema);

const customFieldValue = v.nullable(v.union([v.string(), v.number(), v.boolean()]));

/** `imported_from` (issue 42): where an import brought the object from; null on an object made otherwise. */
const importedFrom = v.pipe(
  nullable(
    v.pipe(
      v.strictObject({
        source: v.pipe(v.picklist(IMPORT_SOURCES), v.description("The import's source.")),
        id: v.pipe(v.string(), v.description("The object's id at the source.")),
        import_id: v.pipe(v.string(), v.description('The import that made it.')),
      }),
      v.title('ImportedFrom'),
    ),
  ),
  v.description(
    'Where an import brought it from; null when it was made otherwise (one an import found by e-mail included).',
  ),
);

const ticketCommon = {
  uuid,
  reference: v.pipe(v.string(), v.description('The account prefix and number, e.g. TKT-000042.')),
  subject: v.string(),
  description: v.string(),
  status: v.picklist(TICKET_STATUSES),
  priority: v.picklist(PRIORITIES),
  category: nullable(v.strictObject({ name: v.string(), slug: v.string() })),
  channel: v.picklist(CHANNELS),
  imported_from: importedFrom,
};

const clock = nullable(
  v.pipe(
    v.strictObject({
      due_at: timestamp,
      completed_at: nullable(timestamp),
      breached_at: v.pipe(
        nullable(timestamp),
        v.description(
          'The due time when the clock was not completed by then (never the time it was noticed).',
        ),
      ),
    }),
    v.title('SlaClock'),
  ),
);

/** The ticket's service-level clocks (decisions.md, "Reply-based service levels"). */
const sla = v.pipe(
  v.strictObject({
    policy: v.pipe(nullable(v.string()), v.description("The matched policy's name.")),
    first_reply: clock,
    next_reply: clock,
    resolution: clock,
  }),
  v.title('Sla'),
);

const ticketTimes = {
  custom_fields: v.record(v.string(), customFieldValue),
  tags: v.array(v.string()),
  due_at: nullable(timestamp),
  created_at: timestamp,
  updated_at: timestamp,
  resolved_at: nullable(timestamp),
  closed_at: nullable(timestamp),
  status_changed_at: v.pipe(
    timestamp,
    v.description(
      'When the status last changed (a new ticket: its created_at); a time rule may count from it. A ticket ' +
        'stored before the field shows its updated_at, which is at or after its last status change.',
    ),
  ),
  last_message_at: v.pipe(
    timestamp,
    v.description("The last message's time, internal notes included (the description is the first message)."),
  ),
  waiting_since: v.pipe(
    nullable(timestamp),
    v.description(
      "When the requester's oldest public message not yet followed by an agent's public reply was written; null when the requester is not waiting.",
    ),
  ),
  sla,
};

const assignee = nullable(v.strictObject({ id, name: v.string(), email: v.string() }));
const team = nullable(v.strictObject({ id, name: v.string() }));
/** A ticket's or contact's organization: its id and its name as it is now (decisions.md). */
const organization = v.pipe(
  nullable(v.strictObject({ id, name: v.string() })),
  v.description(
    "Set when it is made from the requester's contact, else from the organization owning the address's domain " +
      '(none for a free-mail address); kept when the domains change; `organization_id` in a PATCH changes it. ' +
      "The name is the organization's current one.",
  ),
);

export const Ticket = v.pipe(
  v.strictObject({
    ...ticketCommon,
    requester: v.strictObject({
      type: v.literal('email'),
      name: nullable(v.string()),
      email: nullable(v.string()),
      phone: nullable(v.string()),
      contact_id: nullable(id),
      client_id: nullable(id),
      erased: v.optional(
        v.pipe(
          v.literal(true),
          v.description('Present once the requester was erased: name, e-mail and phone are null.'),
        ),
      ),
    }),
    assignee,
    team,
    organization,
    parent_uuid: nullable(uuid),
    ...ticketTimes,
  }),
  v.title('Ticket'),
);

export const ListedTicket = v.pipe(
  v.strictObject({
    ...ticketCommon,
    requester: v.strictObject({
      name: nullable(v.string()),
      email: nullable(v.string()),
      erased: v.optional(v.literal(true)),
    }),
    assignee,
    team,
    organization,
    ...ticketTimes,
  }),
  v.title('ListedTicket'),
);

/** Links keep a custom-field filter's brackets readable (custom_fields[plan]), as Laravel's do: not RFC 3986. */
const url = v.pipe(v.string(), v.regex(/^https?:\/\//));
const link = nullable(url);

/** Laravel's paginator shape around one page of `item`s (lib/pagination.ts). */
const page = <T extends v.GenericSchema>(item: T, title: string) =>
  v.pipe(
    v.strictObject({
      data: v.array(item),
      links: v.strictObject({ first: link, last: link, prev: link, next: link }),
      meta: v.strictObject({
        current_page: id,
        from: nullable(id),
        last_page: id,
        path: url,
        per_page: id,
        to: nullable(id),
        total: count,
      }),
    }),
    v.title(title),
  );
const count = v.pipe(v.number(), v.integer(), v.minValue(0));

export const TicketPage = page(ListedTicket, 'TicketPage');

export const TicketCreated = v.strictObject({
  message: v.literal('Ticket created successfully.'),
  ticket: Ticket,
});

export const TicketUpdated = v.strictObject({
  message: v.literal('Ticket updated successfully.'),
  ticket: Ticket,
});

export const OneTicket = v.strictObject({ data: Ticket });

const messageId = v.pipe(v.string(), v.regex(MESSAGE_ID_PATTERN), v.description('A message id (`msg_…`).'));

/** A message of a ticket's conversation (decisions.md, "Conversations"). */
export const Message = v.pipe(
  v.strictObject({
    id: messageId,
    ticket_uuid: uuid,
    author: v.strictObject({
      type: v.picklist(['agent', 'requester', 'system']),
      agent_id: nullable(id),
      name: v.pipe(
        nullable(v.string()),
        v.description("The author's name as it was when the message was written."),
      ),
      email: v.pipe(
        nullable(v.string()),
        v.description("The author's e-mail as it was when the message was written."),
      ),
    }),
    visibility: v.pipe(
      v.picklist(MESSAGE_VISIBILITIES),
      v.description('`internal`: a note for agents, never sent to the requester and never a reply.'),
    ),
    channel: v.picklist(CHANNELS),
    body: v.string(),
    created_at: timestamp,
    email: v.optional(
      v.pipe(
        v.strictObject({
          message_id: nullable(v.string()),
          from: v.strictObject({ email: v.string(), name: nullable(v.string()) }),
          to: v.pipe(v.array(v.string()), v.description('At most the first 50 addresses of the header.')),
          cc: v.pipe(v.array(v.string()), v.description('At most the first 50 addresses of the header.')),
          to_count: v.optional(
            v.pipe(
              v.number(),
              v.integer(),
              v.description('How many addresses the To header named, when more than `to` keeps.'),
            ),
          ),
          cc_count: v.optional(
            v.pipe(
              v.number(),
              v.integer(),
              v.description('How many addresses the Cc header named, when more than `cc` keeps.'),
            ),
          ),
          subject: v.pipe(
            v.string(),
            v.description('At most 255 characters: a longer subject is cut, its last character `…`.'),
          ),
          in_reply_to: nullable(v.string()),
          threading: v.pipe(
            nullable(
              v.strictObject({
                matched_by: v.picklist([
                  'token_address',
                  'in_reply_to',
                  'references',
                  'subject_reference',
                  'new_ticket',
                ]),
              }),
            ),
            v.description('How a received mail was threaded; null for mail the service sent.'),
          ),
          automatic: nullable(v.string()),
          authentication: v.optional(
            v.pipe(
              v.strictObject({ spf: v.string(), dkim: v.string(), dmarc: v.string() }),
              v.description(
                'A received mail: its SPF, DKIM and DMARC results (`pass`, `fail`, `softfail`, `neutral`, `none`, ' +
                  "`temperror`, `permerror`, `policy`): deployed SES's verdicts, locally the `Authentication-Results` " +
                  "header of the server's own authserv-id (`SMTP_AUTHSERV_ID`). An agent's address writes as the " +
                  'agent only with `dmarc` `pass`.',
              ),
            ),
          ),
          quoted_text_removed: v.pipe(
            v.boolean(),
            v.description(
              'Quoted history or a signature was taken out of the body (never for trimmed blanks).',
            ),
          ),
          body_truncated: v.optional(
            v.pipe(
              v.boolean(),
              v.description(
                'The text was longer than 65,536 characters and was cut (before quoted text was looked for); the ' +
                  'raw mail is whole.',
              ),
            ),
          ),
          attachments_omitted: v.optional(v.pipe(v.number(), v.integer())),
          spam: v.optional(
            v.pipe(
              v.boolean(),
              v.description(
                "true when SES's spam scan failed the received mail (deployed only); absent otherwise.",
              ),
            ),
          ),
          virus: v.optional(
            v.pipe(
              v.boolean(),
              v.description(
                "true when SES's virus scan failed the received mail (deployed only): its attachments are listed but " +
                  'never kept, and their downloads answer 404. Absent otherwise.',
              ),
            ),
          ),
          delivery: v.optional(
            v.pipe(
              v.strictObject({
                status: v.picklist(['queued', 'sent', 'failed', 'bounced']),
                attempts: v.pipe(v.number(), v.integer(), v.minValue(0)),
                provider_message_id: nullable(v.string()),
              }),
              v.description(
                "Mail the service sends (an agent's public reply to a requester with an e-mail address): its " +
                  'delivery. `queued` from the commit until the relay or SES accepts it (`sent`); `failed` after a ' +
                  'permanent refusal or the last retry; `bounced` when a delivery report came back. ' +
                  '`provider_message_id`: the Message-ID the provider gave it (SES replaces the one sent).',
              ),
            ),
          ),
        }),
        v.description(
          'A message that came by e-mail, or that the service e-mails: its mail (decisions.md, "The e-mail channel").',
        ),
      ),
    ),
    attachments: v.optional(
      v.array(
        v.strictObject({
          id: v.string(),
          filename: v.string(),
          content_type: v.string(),
          size: v.pipe(v.number(), v.integer()),
        }),
      ),
    ),
  }),
  v.title('Message'),
  v.examples([
    {
      id: 'msg_0000000002a1b2c3d4e5f60718',
      ticket_uuid: '0190f5c2-8a4b-7000-8000-00000000002a',
      author: { type: 'agent', agent_id: 3, name: 'Ada Agent', email: 'ada@acme.test' },
      visibility: 'public',
      channel: 'api',
      body: 'Thanks, we are looking into it.',
      created_at: '2026-11-27T09:15:02.123456Z',
    },
  ]),
);

/** One received mail and its outcome (`GET /api/email/inbound`). */
export const InboundMailPage = v.pipe(
  v.strictObject({
    data: v.array(
      v.strictObject({
        id: v.pipe(v.string(), v.description('The received mail (`in_…`, time-ordered).')),
        received_at: timestamp,
        header_message_id: nullable(v.string()),
        from: nullable(v.string()),
        subject: nullable(v.string()),
        outcome: v.picklist(INBOUND_OUTCOMES),
        reason: nullable(v.string()),
        ticket_uuid: nullable(uuid),
        message_id: nullable(messageId),
      }),
    ),
    next_cursor: v.pipe(
      nullable(v.string()),
      v.description('Pass as `after` for the next (older) page; null at the end.'),
    ),
  }),
  v.title('InboundMailPage'),
);

export const MessageCreated = v.strictObject({
  message: v.literal('Message added successfully.'),
  data: Message,
  ticket: v.pipe(
    Ticket,
    v.description('The ticket after the message; on a closed ticket, the follow-up the message opened.'),
  ),
});
export const OneMessage = v.strictObject({ data: Message });
export const MessagePage = v.pipe(
  v.strictObject({
    data: v.array(Message),
    next_cursor: v.pipe(
      v.nullable(messageId),
      v.description(
        'Pass as `after` for the next page; null at the end of the conversation. The last message examined: a page filtered by `visibility` may hold fewer than `limit`.',
      ),
    ),
  }),
  v.title('MessagePage'),
);

export const Deal = v.pipe(
  v.strictObject({
    uuid,
    name: v.string(),
    amount: v.pipe(v.number(), v.minValue(0)),
    currency: v.pipe(v.string(), v.regex(/^[A-Z]{3}$/)),
    status: v.literal('open'),
    probability: v.pipe(v.number(), v.minValue(0), v.maxValue(100)),
    pipeline: v.strictObject({ id, name: v.string() }),
    stage: v.strictObject({ id, name: v.string(), color: v.string() }),
    contact: v.strictObject({
      uuid,
      full_name: nullable(v.string()),
      email: nullable(v.string()),
      erased: v.optional(
        v.pipe(
          v.literal(true),
          v.description('Present once the contact was erased: its name and e-mail are null.'),
        ),
      ),
    }),
    created_at: timestamp,
  }),
  v.title('Deal'),
);

export const DealCreated = v.strictObject({ data: Deal });

const date = v.pipe(v.string(), v.isoDate());
const dealStatus = v.picklist(['open', 'won', 'lost']);

/** A deal as GET, PATCH and the list answer it: the create's fields, and those that move. */
export const DealDetail = v.pipe(
  v.strictObject({
    ...Deal.pipe[0].entries,
    status: dealStatus,
    expected_close_date: nullable(date),
    lost_reason: nullable(v.string()),
    won_at: nullable(timestamp),
    lost_at: nullable(timestamp),
    updated_at: timestamp,
  }),
  v.title('DealDetail'),
);
export const OneDeal = v.strictObject({ data: DealDetail });
export const DealUpdated = v.strictObject({
  message: v.literal('Deal updated successfully.'),
  data: DealDetail,
});
export const DealPage = page(DealDetail, 'DealPage');

const amount = v.pipe(v.number(), v.minValue(0));
const boardClosed = v.strictObject({
  count,
  totals: v.array(v.strictObject({ currency: v.string(), amount })),
});
export const PipelineBoard = v.pipe(
  v.strictObject({
    data: v.strictObject({
      pipeline: v.strictObject({ id, name: v.string() }),
      stages: v.array(
        v.strictObject({
          id,
          name: v.string(),
          position: v.pipe(v.number(), v.integer()),
          probability: v.pipe(v.number(), v.minValue(0), v.maxValue(100)),
          count,
          totals: v.array(v.strictObject({ currency: v.string(), amount, weighted: amount })),
        }),
      ),
      won: boardClosed,
      lost: boardClosed,
    }),
  }),
  v.title('PipelineBoard'),
);

export const Contact = v.pipe(
  v.strictObject({
    uuid,
    id,
    first_name: v.string(),
    last_name: nullable(v.string()),
    full_name: v.string(),
    email: v.string(),
    phone: nullable(v.string()),
    organization,
    created_at: timestamp,
    updated_at: timestamp,
    open_deals_count: count,
    imported_from: importedFrom,
  }),
  v.title('Contact'),
);
export const OneContact = v.strictObject({ data: Contact });
export const ContactUpdated = v.strictObject({
  message: v.literal('Contact updated successfully.'),
  data: Contact,
});
export const ContactPage = page(Contact, 'ContactPage');

export const Organization = v.pipe(
  v.strictObject({
    id: v.pipe(
      id,
      v.description("From the account's sequence: never reused, a deleted organization's included."),
    ),
    name: v.string(),
    domains: v.pipe(
      v.array(v.string()),
      v.description(
        "Lower-case; an internationalized domain in its ASCII form. Each is this organization's alone.",
      ),
    ),
    external_id: nullable(v.string()),
    created_at: timestamp,
    updated_at: timestamp,
    imported_from: importedFrom,
  }),
  v.title('Organization'),
  v.examples([
    {
      id: 7,
      name: 'Acme Corp',
      domains: ['acme.example', 'xn--bcher-kva.example'],
      external_id: 'crm-1042',
      created_at: '2026-11-27T09:15:02.123456Z',
      updated_at: '2026-11-27T09:15:02.123456Z',
      imported_from: null,
    },
  ]),
);
export const OneOrganization = v.strictObject({ data: Organization });
export const OrganizationPage = v.pipe(
  v.strictObject({
    data: v.array(Organization),
    next_cursor: v.pipe(
      v.nullable(v.pipe(v.string(), v.regex(/^\d+$/))),
      v.description("Pass as `after` for the next page: the last organization's id; null on the last page."),
    ),
  }),
  v.title('OrganizationPage'),
);

const eventId = v.pipe(v.string(), v.regex(EVENT_ID_PATTERN), v.description('An event id.'));
const previous = v.pipe(
  v.record(v.string(), v.unknown()),
  v.description("The changed fields' values before the change, by field name (only those that changed)."),
);
const version = v.pipe(id, v.description("The object's version after the change: the number in its ETag."));

const importId = v.optional(
  v.pipe(
    v.string(),
    v.description(
      'Present on the changes an import made, and on those its undo made (spec: "Imports"): its job id. ' +
        'Webhooks never receive those events.',
    ),
  ),
);

/**
 * One event type's schema: `data.object` is the resource as its GET answers it after the change; `import_id` (top
 * level, as the spec has it) on an import's changes.
 */
function eventSchema<T extends v.GenericSchema>(
  type: string,
  object: T,
  title: string,
  updated: boolean,
  more: v.ObjectEntries = {},
) {
  const entries: v.ObjectEntries = { object, ...(updated ? { previous } : {}), ...more, version };
  const data = v.strictObject(entries);
  return v.pipe(
    v.strictObject({ id: eventId, type: v.literal(type), created_at: timestamp, import_id: importId, data }),
    v.title(title),
  );
}

/**
 * What a change's rules say on its ticket and message events (spec: "Business rules"; docs/rules.md): present only
 * when a rule fired, the cap stopped one, or an action was skipped.
 */
const ruled = {
  rules: v.optional(
    v.pipe(
      v.array(v.strictObject({ id, version: id })),
      v.description('The rules that fired in this change, in order, each at the version that fired.'),
    ),
  ),
  rules_stopped: v.optional(
    v.pipe(
      v.literal(true),
      v.description('The cap (10 rules a change) stopped a rule that would have fired.'),
    ),
  ),
  rules_skipped: v.optional(
    v.pipe(
      v.array(v.strictObject({ id, reason: v.picklist(SKIP_REASONS) })),
      v.description("Rules' actions not applied, with why (a reply to automatic mail, past 3 an hour...)."),
    ),
  ),
};

export const TicketCreatedEvent = eventSchema('ticket.created', Ticket, 'TicketCreatedEvent', false, ruled);
export const TicketUpdatedEvent = eventSchema('ticket.updated', Ticket, 'TicketUpdatedEvent', true, ruled);
export const MessageCreatedEvent = eventSchema(
  'message.created',
  Message,
  'MessageCreatedEvent',
  false,
  ruled,
);
export const MessageDeliveryFailedEvent = v.pipe(
  v.strictObject({
    id: eventId,
    type: v.literal('message.delivery_failed'),
    created_at: timestamp,
    data: v.strictObject({
      object: Message,
      reason: v.pipe(
        v.string(),
        v.description("Why: the relay's or provider's refusal, `bounced`, or `suppressed: …`."),
      ),
      version,
    }),
  }),
  v.title('MessageDeliveryFailedEvent'),
);
export const TicketSlaBreachedEvent = v.pipe(
  v.strictObject({
    id: eventId,
    type: v.literal('ticket.sla_breached'),
    created_at: timestamp,
    data: v.strictObject({
      object: Ticket,
      metric: v.picklist(['first_reply', 'next_reply', 'resolution']),
      due_at: v.pipe(timestamp, v.description("The breached clock's due time (its breached_at).")),
      version,
    }),
  }),
  v.title('TicketSlaBreachedEvent'),
);
export const DealCreatedEvent = eventSchema('deal.created', DealDetail, 'DealCreatedEvent', false);
export const DealUpdatedEvent = eventSchema('deal.updated', DealDetail, 'DealUpdatedEvent', true);
export const ContactCreatedEvent = eventSchema('contact.created', Contact, 'ContactCreatedEvent', false);
export const ContactUpdatedEvent = eventSchema('contact.updated', Contact, 'ContactUpdatedEvent', true);
export const TicketDeletedEvent = eventSchema('ticket.deleted', Ticket, 'TicketDeletedEvent', false);
export const TicketRestoredEvent = eventSchema('ticket.restored', Ticket, 'TicketRestoredEvent', false);
export const DealDeletedEvent = eventSchema('deal.deleted', DealDetail, 'DealDeletedEvent', false);
export const DealRestoredEvent = eventSchema('deal.restored', DealDetail, 'DealRestoredEvent', false);
export const ContactDeletedEvent = eventSchema('contact.deleted', Contact, 'ContactDeletedEvent', false);
export const ContactRestoredEvent = eventSchema('contact.restored', Contact, 'ContactRestoredEvent', false);
export const OrganizationCreatedEvent = eventSchema(
  'organization.created',
  Organization,
  'OrganizationCreatedEvent',
  false,
);
export const OrganizationUpdatedEvent = eventSchema(
  'organization.updated',
  Organization,
  'OrganizationUpdatedEvent',
  true,
);
/** `organization.deleted`: the organization as it was (deleted for good, never to the trash). */
export const OrganizationDeletedEvent = eventSchema(
  'organization.deleted',
  Organization,
  'OrganizationDeletedEvent',
  false,
);
export { Macro, MacroPage, OneMacro, OneRule, Rule, RulePage } from './rule-schemas.ts';
export const RuleCreatedEvent = eventSchema('rule.created', Rule, 'RuleCreatedEvent', false);
export const RuleUpdatedEvent = eventSchema('rule.updated', Rule, 'RuleUpdatedEvent', true);
export const RuleDeletedEvent = eventSchema('rule.deleted', Rule, 'RuleDeletedEvent', false);
export const MacroCreatedEvent = eventSchema('macro.created', Macro, 'MacroCreatedEvent', false);
export const MacroUpdatedEvent = eventSchema('macro.updated', Macro, 'MacroUpdatedEvent', true);
export const MacroDeletedEvent = eventSchema('macro.deleted', Macro, 'MacroDeletedEvent', false);

const testedCondition = v.record(v.string(), v.unknown());
/** `POST /api/rules/test`'s answer (decisions.md, "Business rules"): what the change would do; nothing written. */
export const RuleTestResult = v.pipe(
  v.strictObject({
    data: v.strictObject({
      fired: v.array(v.strictObject({ id, name: v.string(), matched: v.array(testedCondition) })),
      not_fired: v.array(
        v.strictObject({
          id,
          name: v.string(),
          failed: v.pipe(
            v.array(testedCondition),
            v.description(
              "The first failing condition, with the ticket's value (`actual`); empty with `reason`.",
            ),
          ),
          reason: v.optional(
            v.pipe(
              v.picklist(['stopped', 'skipped']),
              v.description(
                'Its conditions held, but the cap of 10 stopped it, or every action was skipped.',
              ),
            ),
          ),
        }),
      ),
      ticket: v.pipe(Ticket, v.description('The ticket as the change and its rules would leave it.')),
      messages: v.array(
        v.strictObject({
          rule_id: nullable(id),
          visibility: v.picklist(['public', 'internal']),
          body: v.string(),
          agent_id: nullable(id),
        }),
      ),
      mail: v.array(v.strictObject({ to: v.string(), body: v.string() })),
      rules_stopped: v.boolean(),
      rules_skipped: v.array(v.strictObject({ id, reason: v.string() })),
    }),
  }),
  v.title('RuleTestResult'),
);

/** `POST /api/rules/{rule}/backtest`'s answer (decisions.md, "Business rules"; docs/rules.md, "Backtest"). */
export const RuleBacktestResult = v.pipe(
  v.strictObject({
    data: v.strictObject({
      changes: v.pipe(
        v.number(),
        v.integer(),
        v.description("The changes of the rule's kind in the part read (a time rule: every ticket change)."),
      ),
      would_fire: v.pipe(
        v.number(),
        v.integer(),
        v.description('How many of them the rule would have fired on.'),
      ),
      tickets: v.pipe(
        v.array(v.pipe(v.string(), v.uuid())),
        v.maxLength(100),
        v.description('The tickets it would have fired on, the first 100, each once.'),
      ),
      next_cursor: v.pipe(
        v.nullable(v.string()),
        v.description('Send it back as `after`, with the same window, to read on; null: the window is read.'),
      ),
    }),
  }),
  v.title('RuleBacktestResult'),
  v.examples([
    {
      data: {
        changes: 1204,
        would_fire: 37,
        tickets: ['0190f3c2-5d1e-7c3a-9b2f-3f1c2d4e5a6b', '0190f3c4-0a7d-7e21-8c3b-4a5b6c7d8e9f'],
        next_cursor: '2s9te8v4k0',
      },
    },
  ]),
);

/** A value a rule or macro changed (`changes`' `from` and `to`): ids, the category's slug, tags, a custom field's. */
const changedValue = v.nullable(v.union([v.string(), v.number(), v.boolean(), v.array(v.string())]));

/**
 * `POST /api/tickets/{ticket}/macros/{macro}`'s answer (decisions.md, "Business rules"): as a PATCH's; with
 * `?dry_run=true` the ticket as it would be and `dry_run`, what the change would do (docs/rules.md, "Macros applied").
 */
export const MacroApplied = v.pipe(
  v.strictObject({
    message: v.picklist(['Ticket updated successfully.', 'Dry run: nothing was written.']),
    ticket: Ticket,
    dry_run: v.optional(
      v.pipe(
        v.strictObject({
          changes: v.array(v.strictObject({ field: v.string(), from: changedValue, to: changedValue })),
          messages: v.array(
            v.strictObject({
              rule_id: nullable(id),
              visibility: v.picklist(['public', 'internal']),
              body: v.string(),
              agent_id: nullable(id),
            }),
          ),
          mail: v.array(v.strictObject({ to: v.string(), body: v.string() })),
          fired: v.array(v.strictObject({ id, name: v.string(), matched: v.array(testedCondition) })),
          not_fired: v.array(
            v.strictObject({
              id,
              name: v.string(),
              failed: v.array(testedCondition),
              reason: v.optional(v.picklist(['stopped', 'skipped'])),
            }),
          ),
          rules_stopped: v.boolean(),
          rules_skipped: v.array(v.strictObject({ id, reason: v.string() })),
          skipped: v.pipe(
            v.array(v.strictObject({ action: v.number(), reason: v.picklist(SKIP_REASONS) })),
            v.description("The macro's actions that would not apply, by index, with why."),
          ),
        }),
        v.description('Only with `?dry_run=true`: what the change would write, and the rules it would fire.'),
      ),
    ),
  }),
  v.title('MacroApplied'),
);

/** `contact.erased` (decisions.md, "Deleting, restoring and erasing"): uuids only, nothing personal. */
export const ContactErasedEvent = v.pipe(
  v.strictObject({
    id: eventId,
    type: v.literal('contact.erased'),
    created_at: timestamp,
    data: v.strictObject({
      object: v.pipe(
        v.strictObject({
          uuid: v.pipe(
            nullable(uuid),
            v.description("The erased contact's uuid; null when there was no contact."),
          ),
          tickets: v.pipe(
            v.array(uuid),
            v.description('The tickets the person requested, now erased of them.'),
          ),
          deals: v.pipe(v.array(uuid), v.description("The contact's deals, now showing it erased.")),
        }),
        v.description('Purge your copies of the person: every object they were in is named here.'),
      ),
      version,
    }),
  }),
  v.title('ContactErasedEvent'),
);
/** People (decisions.md, "People: agents, teams and organizations"). */
const idList = (what: string) =>
  v.pipe(v.array(id), v.description(`${what}, in ascending order: one membership, seen from either side.`));
const nextCursor = v.pipe(
  v.nullable(v.pipe(v.string(), v.regex(/^\d+$/))),
  v.description('Pass as `after` for the next page (the last id of this one); null on the last page.'),
);

export const Agent = v.pipe(
  v.strictObject({
    id,
    email: v.string(),
    name: v.string(),
    active: v.pipe(v.boolean(), v.description('False: retired (agents are never deleted).')),
    team_ids: idList("The agent's teams"),
    status: v.pipe(
      v.picklist(AGENT_STATUSES),
      v.description('An away or offline agent whose `status_until` has passed reads as available.'),
    ),
    status_until: v.pipe(
      nullable(timestamp),
      v.description('When an away or offline status ends; null: never.'),
    ),
    capacity: v.pipe(
      nullable(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000))),
      v.description('The most open tickets automatic assignment gives the agent; null: no limit.'),
    ),
    open_tickets: v.pipe(count, v.description('Its tickets in open, pending or in_progress, exact.')),
    created_at: timestamp,
    updated_at: timestamp,
    imported_from: importedFrom,
  }),
  v.title('Agent'),
);
export const OneAgent = v.strictObject({ data: Agent });
export const AgentPage = v.pipe(
  v.strictObject({ data: v.array(Agent), next_cursor: nextCursor }),
  v.title('AgentPage'),
);

export const Team = v.pipe(
  v.strictObject({
    id,
    name: v.string(),
    agent_ids: idList("The team's agents"),
    created_at: timestamp,
    updated_at: timestamp,
    imported_from: importedFrom,
  }),
  v.title('Team'),
);
export const OneTeam = v.strictObject({ data: Team });
export const TeamPage = v.pipe(
  v.strictObject({ data: v.array(Team), next_cursor: nextCursor }),
  v.title('TeamPage'),
);

export const AgentCreatedEvent = eventSchema('agent.created', Agent, 'AgentCreatedEvent', false);
export const AgentUpdatedEvent = eventSchema('agent.updated', Agent, 'AgentUpdatedEvent', true);
export const TeamCreatedEvent = eventSchema('team.created', Team, 'TeamCreatedEvent', false);
export const TeamUpdatedEvent = eventSchema('team.updated', Team, 'TeamUpdatedEvent', true);
export const TeamDeletedEvent = eventSchema('team.deleted', Team, 'TeamDeletedEvent', false);

/** Imports (decisions.md, "Imports: moving a helpdesk in"): never the credentials. */
const importCounts = v.strictObject({
  source: v.pipe(v.number(), v.integer(), v.minValue(0), v.description('Records the source gave.')),
  created: v.pipe(v.number(), v.integer(), v.minValue(0)),
  updated: v.pipe(v.number(), v.integer(), v.minValue(0)),
  unchanged: v.pipe(v.number(), v.integer(), v.minValue(0)),
  failed: v.pipe(v.number(), v.integer(), v.minValue(0), v.description('Records with an error row.')),
});
const importFields = {
  id: v.pipe(v.string(), v.regex(IMPORT_ID_PATTERN)),
  source: v.picklist(['zendesk', 'freshdesk', 'ndjson']),
  mode: v.pipe(
    v.picklist(['validate', 'run']),
    v.description('`validate` reads everything and writes nothing.'),
  ),
  status: v.picklist([
    'queued',
    'running',
    'paused',
    'completed',
    'failed',
    'cancelled',
    'undoing',
    'undone',
  ]),
  phase: v.pipe(
    v.picklist(['agents', 'teams', 'organizations', 'contacts', 'tickets', 'undo']),
    v.description(
      'What is being read: people first, then tickets with their messages and attachments; `undo` once undone.',
    ),
  ),
  progress: v.strictObject({
    done: v.pipe(v.number(), v.integer(), v.minValue(0), v.description('Tickets read so far.')),
    total: v.pipe(
      nullable(v.pipe(v.number(), v.integer(), v.minValue(0))),
      v.description('Null until known.'),
    ),
  }),
  counts: v.strictObject(Object.fromEntries(IMPORT_TYPES.map((type) => [type, importCounts]))),
  created_at: timestamp,
  started_at: nullable(timestamp),
  completed_at: nullable(timestamp),
  failure: v.pipe(
    nullable(v.string()),
    v.description('Why the import failed (the source refused the credentials…).'),
  ),
};
const zeroCounts = { source: 0, created: 0, updated: 0, unchanged: 0, failed: 0 };
const importExample: v.InferInput<v.StrictObjectSchema<typeof importFields, undefined>> = {
  id: 'imp_1764927300000a1b2c3d4e5',
  source: 'zendesk',
  mode: 'run',
  status: 'running',
  phase: 'tickets',
  progress: { done: 1200, total: 4800 },
  counts: {
    teams: zeroCounts,
    organizations: zeroCounts,
    messages: zeroCounts,
    attachments: zeroCounts,
    agents: { source: 12, created: 3, updated: 0, unchanged: 9, failed: 0 },
    contacts: { source: 950, created: 948, updated: 0, unchanged: 0, failed: 2 },
    tickets: { source: 1200, created: 1200, updated: 0, unchanged: 0, failed: 0 },
  },
  created_at: '2026-12-05T09:15:00.000000Z',
  started_at: '2026-12-05T09:15:01.204311Z',
  completed_at: null,
  failure: null,
};
export const Import = v.pipe(v.strictObject(importFields), v.title('Import'), v.examples([importExample]));
export const OneImport = v.strictObject({ data: Import });
export const StartedImport = v.strictObject({
  data: v.pipe(
    v.strictObject({
      ...importFields,
      upload_url: v.pipe(
        v.optional(v.pipe(v.string(), v.url())),
        v.description('ndjson only: PUT the file here (for an hour); the import starts once it is in.'),
      ),
    }),
    v.title('StartedImport'),
    v.examples([{ ...importExample, status: 'queued', progress: { done: 0, total: null } }]),
  ),
});
/** `POST /api/imports/{import}/undo`'s answer: the import as it is being undone. */
export const UndoingImport = v.strictObject({
  data: v.pipe(
    v.strictObject(importFields),
    v.title('UndoingImport'),
    v.examples([
      {
        ...importExample,
        status: 'undoing',
        phase: 'undo',
        progress: { done: 4800, total: 4800 },
        completed_at: '2026-12-05T10:52:40.118052Z',
      },
    ]),
  ),
});
export const ImportPage = v.pipe(
  v.strictObject({
    data: v.array(Import),
    next_cursor: v.pipe(
      nullable(v.string()),
      v.description(
        "Pass as `after` for the next page (older imports): the last one's id; null on the last page.",
      ),
    ),
  }),
  v.title('ImportPage'),
);
export const ImportErrorPage = v.pipe(
  v.strictObject({
    data: v.array(
      v.strictObject({
        type: v.picklist(IMPORT_TYPES),
        source_id: v.pipe(v.string(), v.description("The record's id at the source (or the file's line).")),
        reason: v.string(),
      }),
    ),
    next_cursor: v.pipe(
      nullable(v.string()),
      v.description('Pass as `after` for the next page; null on the last.'),
    ),
  }),
  v.title('ImportErrorPage'),
  v.examples([
    {
      data: [
        { type: 'organizations', source_id: '360001', reason: 'gmail.com is a free-mail domain: dropped.' },
      ],
      next_cursor: null,
    },
  ]),
);
export const ImportCompletedEvent = eventSchema('import.completed', Import, 'ImportCompletedEvent', false);
export const ImportFailedEvent = eventSchema('import.failed', Import, 'ImportFailedEvent', false);

export const Event = v.pipe(
  v.union([
    ImportCompletedEvent,
    ImportFailedEvent,
    ContactErasedEvent,
    TicketDeletedEvent,
    TicketRestoredEvent,
    DealDeletedEvent,
    DealRestoredEvent,
    ContactDeletedEvent,
    ContactRestoredEvent,
    TicketCreatedEvent,
    TicketUpdatedEvent,
    MessageCreatedEvent,
    MessageDeliveryFailedEvent,
    TicketSlaBreachedEvent,
    DealCreatedEvent,
    DealUpdatedEvent,
    ContactCreatedEvent,
    ContactUpdatedEvent,
    AgentCreatedEvent,
    AgentUpdatedEvent,
    TeamCreatedEvent,
    TeamUpdatedEvent,
    TeamDeletedEvent,
    OrganizationCreatedEvent,
    OrganizationUpdatedEvent,
    OrganizationDeletedEvent,
    RuleCreatedEvent,
    RuleUpdatedEvent,
    RuleDeletedEvent,
    MacroCreatedEvent,
    MacroUpdatedEvent,
    MacroDeletedEvent,
  ]),
  v.title('Event'),
);
export const EventFeed = v.pipe(
  v.strictObject({
    data: v.array(Event),
    next_cursor: v.pipe(
      v.nullable(eventId),
      v.description(
        'Pass as `after` for the next page; null when nothing after `after` is in the feed yet. Usually the last event examined; after a page that passed only the places of failed commits, an id past them that names no event.',
      ),
    ),
  }),
  v.title('EventFeed'),
);
export const OneEvent = v.strictObject({ data: Event });

export const Pipeline = v.pipe(
  v.strictObject({
    id,
    name: v.string(),
    is_default: v.boolean(),
    stages: v.array(
      v.strictObject({
        id,
        name: v.string(),
        color: v.string(),
        probability: v.pipe(v.number(), v.minValue(0), v.maxValue(100)),
        position: v.pipe(v.number(), v.integer()),
      }),
    ),
  }),
  v.title('Pipeline'),
);

export const PipelineList = v.strictObject({ data: v.array(Pipeline) });

/** Every error but the two below: a message for people. */
export const ErrorBody = v.pipe(v.strictObject({ message: v.string() }), v.title('Error'));

/** 422: the first message (and how many more), and every field's messages under the request's names. */
export const ValidationErrorBody = v.pipe(
  v.strictObject({
    message: v.string(),
    errors: v.record(v.string(), v.pipe(v.array(v.string()), v.minLength(1))),
  }),
  v.title('ValidationError'),
);

/** 500 and 502: nothing about the cause, the id to quote to support. */
export const ServerErrorBody = v.pipe(
  v.strictObject({ message: v.literal('Server error.'), request_id: v.string() }),
  v.title('ServerError'),
);

const endpointId = v.pipe(
  v.string(),
  v.regex(ENDPOINT_ID_PATTERN),
  v.description("A webhook endpoint's id."),
);
const eventTypes = v.pipe(
  v.array(v.string()),
  v.description('Event types (`ticket.created`), every type of a resource (`deal.*`), or every type (`*`).'),
);

/** A webhook endpoint as every answer shows it: never its secrets. */
export const WebhookEndpoint = v.pipe(
  v.strictObject({
    id: endpointId,
    url: v.string(),
    events: eventTypes,
    description: nullable(v.string()),
    enabled: v.boolean(),
    disabled_reason: v.pipe(
      nullable(v.string()),
      v.description(
        'Why deskpipe disabled the endpoint (it answered 410, or failed for 5 days); null otherwise.',
      ),
    ),
    created_at: timestamp,
    updated_at: timestamp,
  }),
  v.title('WebhookEndpoint'),
);

const secret = v.pipe(
  nullable(v.pipe(v.string(), v.regex(/^whsec_[A-Za-z0-9+/]{43}=$/))),
  v.description(
    'The signing secret (`whsec_` + base64 of 32 bytes): shown in this answer only. Null when the answer is ' +
      'the replay of an earlier request with the same Idempotency-Key: the secret is kept nowhere but in the ' +
      'endpoint, so rotate it to get a new one.',
  ),
);

/** The answer of a create: the endpoint and its secret. */
export const WebhookEndpointWithSecret = v.pipe(
  v.strictObject({ ...WebhookEndpoint.pipe[0].entries, secret }),
  v.title('WebhookEndpointWithSecret'),
);

export const WebhookCreated = v.strictObject({ data: WebhookEndpointWithSecret });
export const OneWebhook = v.strictObject({ data: WebhookEndpoint });
export const WebhookList = v.strictObject({ data: v.array(WebhookEndpoint) });
export const WebhookUpdated = v.strictObject({
  message: v.literal('Webhook endpoint updated.'),
  data: WebhookEndpoint,
});
export const WebhookDeleted = v.strictObject({ message: v.literal('Webhook endpoint deleted.') });
export const WebhookSecretRotated = v.strictObject({
  data: v.strictObject({
    secret,
    previous_secret_expires_at: v.pipe(
      timestamp,
      v.description('Until then the previous secret signs too (a second `v1,` entry of webhook-signature).'),
    ),
  }),
});

/** One attempt of the deliveries log. */
export const WebhookDeliveryAttempt = v.pipe(
  v.strictObject({
    event_id: eventId,
    event_type: v.string(),
    attempt: v.pipe(id, v.description("The attempt's number among its event's attempts to this endpoint.")),
    status: v.pipe(
      nullable(v.pipe(v.number(), v.integer())),
      v.description("The receiver's HTTP status, or null."),
    ),
    error: v.pipe(
      nullable(v.string()),
      v.description(
        'What failed without an answer (a timeout, a refused connection, a refused URL), or null.',
      ),
    ),
    duration_ms: count,
    attempted_at: timestamp,
    next_attempt_at: v.pipe(
      nullable(timestamp),
      v.description('When it is tried again; null when it is not.'),
    ),
  }),
  v.title('WebhookDeliveryAttempt'),
);
export const WebhookDeliveryAttemptPage = page(WebhookDeliveryAttempt, 'WebhookDeliveryAttemptPage');

export const WebhookRedelivery = v.strictObject({
  message: v.string(),
  count: v.pipe(count, v.description('The events that will be sent again.')),
});

const keyId = v.pipe(v.string(), v.regex(/^key_[0-9a-f]{16}$/), v.description("An API key's id."));
const grants = v.pipe(
  v.array(v.string()),
  v.description('Scopes (`tickets:read`, `deals:write`, …), or `*` for every scope.'),
);
const keyFields = {
  id: keyId,
  name: v.pipe(nullable(v.string()), v.description('Null for a key made before names.')),
  scopes: grants,
  created_at: timestamp,
  expires_at: v.pipe(nullable(timestamp), v.description('When the key stops working; null: never.')),
};

/** A key as lists show it: never its secret. */
export const ApiKey = v.pipe(
  v.strictObject({
    ...keyFields,
    prefix: v.pipe(v.string(), v.description('`dpk_` and the next 8 characters of the key.')),
    last_used_at: v.pipe(nullable(timestamp), v.description('Accurate to a minute; null: never used.')),
    revoked_at: nullable(timestamp),
  }),
  v.title('ApiKey'),
);

/** A key just made (created or rotated): the only answer that shows its secret. */
export const ApiKeyWithSecret = v.pipe(
  v.strictObject({
    ...keyFields,
    api_key: v.pipe(
      nullable(v.pipe(v.string(), v.regex(/^dpk_[0-9A-Za-z]{46}$/))),
      v.description(
        'The key: shown in this answer only (only a keyed hash of it is kept). Null when the answer is the ' +
          'replay of an earlier request with the same Idempotency-Key: rotate the key to get a new secret.',
      ),
    ),
  }),
  v.title('ApiKeyWithSecret'),
);

export const ApiKeyCreated = v.strictObject({ data: ApiKeyWithSecret });
export const ApiKeyList = v.strictObject({ data: v.array(ApiKey) });
export const ApiKeyRevoked = v.strictObject({ data: ApiKey });

/** Deleting, restoring and the trash (decisions.md, "Deleting, restoring and erasing"). */
const trashType = v.picklist(['ticket', 'deal', 'contact']);
const purgeAt = v.pipe(
  timestamp,
  v.description('When the object and all it owns are purged for good (30 days after its deletion).'),
);
const deletedData = v.strictObject({ uuid, deleted_at: timestamp, purge_at: purgeAt });
export const TicketDeleted = v.strictObject({ message: v.literal('Ticket deleted.'), data: deletedData });
export const DealDeleted = v.strictObject({ message: v.literal('Deal deleted.'), data: deletedData });
export const ContactDeleted = v.strictObject({ message: v.literal('Contact deleted.'), data: deletedData });
export const TrashItem = v.pipe(
  v.strictObject({
    uuid,
    type: trashType,
    title: v.pipe(
      v.string(),
      v.description("The ticket's subject, the deal's name, the contact's full name."),
    ),
    deleted_at: timestamp,
    purge_at: purgeAt,
  }),
  v.title('TrashItem'),
);
export const TrashPage = v.pipe(
  v.strictObject({
    data: v.array(TrashItem),
    next_cursor: v.pipe(
      v.nullable(v.string()),
      v.description('Pass as `after` for the next page (older deletions); null on the last page.'),
    ),
  }),
  v.title('TrashPage'),
);
export const Restored = v.pipe(
  v.strictObject({
    message: v.picklist(['Ticket restored.', 'Deal restored.', 'Contact restored.']),
    data: v.union([Ticket, DealDetail, Contact]),
  }),
  v.title('Restored'),
);

/** Erasures (decisions.md, "Deleting, restoring and erasing"): never the address, never its hash. */
export const Erasure = v.pipe(
  v.strictObject({
    id: v.pipe(v.string(), v.regex(/^ers_\d{13}[0-9a-f]{10}$/)),
    status: v.picklist(['running', 'completed']),
    requested_at: timestamp,
    completed_at: nullable(timestamp),
    counts: v.pipe(
      v.record(v.string(), v.pipe(v.number(), v.integer(), v.minValue(0))),
      v.description(
        'Items changed or removed per store (`contact`, `tickets`, `messages`, `deals`, `events`, `idempotency`, ' +
          '`email_inbound`, `email_outbound`, `mail`, `trash`, `index`); empty while running.',
      ),
    ),
  }),
  v.title('Erasure'),
);
export const ErasureAnswer = v.strictObject({ data: Erasure });
