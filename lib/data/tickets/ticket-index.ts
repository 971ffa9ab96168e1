import { PRIORITIES, type Priority } from '#lib/accounts/types.ts';
import { emailTerms, textWords, usefulTerms } from '#lib/search.ts';
import { isBreached, nextDueUs } from '#lib/tickets/owed-breaches.ts';
import { dueSortValue } from '#lib/tickets/sla-clocks.ts';
import {
  BUSY_STATUSES,
  customFieldText,
  isOpenWork,
  queueSortValue,
  TICKET_STATUSES,
  type Ticket,
  type TicketFilter,
  type TicketStatus,
} from '#lib/tickets/types.ts';
import { parseTimestamp } from '#lib/time.ts';
import { ALL, type SearchTerms } from '../index/declaration.ts';
import { filterDimensions } from '../index/dimensions.ts';
import { indexedEntity } from '../index/engine.ts';
import { COUNTS } from '../index/stats-cells.ts';

/**
 * An agent's cell: its ticket count and open work in one small item per agent (unsharded: least-busy's condition
 * names it), so no item grows with the agents and the least-busy pick reads one partition.
 */
export const AGENT = { family: 'agent', sharded: false };

/**
 * A team's cell: its open, pending and in-progress tickets, assigned or waiting (decisions.md, "People": a team
 * that has open tickets is not deleted). Sharded as the counts are, so that no item is met by every create into a
 * busy team (a change adds to its own shard); closable, so that the team's deletion closes it (every shard still
 * as read, summing to none, and marked) and a ticket entering the team after it is refused on its own shard
 * (lib/data/index/closed-cells.ts). Written only when a ticket enters or leaves a team's open work (a create into a
 * team, a resolution, a reopen, a team change, a deletion or restore), never by a change between open statuses
 * nor by a reply.
 */
export const TEAM = { family: 'team', sharded: true, closable: true } as const;

/**
 * An agent's queues (its tickets of each status, and of each status and priority): a cell per agent beside its
 * `agent` cell (not in it: least-busy reads every agent's cell, and these ~25 counts would make that ~10× the read
 * units),
 * sharded as the counts are: a status change of an agent's ticket moves these and not its open work, so one item
 * per agent would be met by every such change of its tickets (the contention bench's most contested item at 20
 * agents). A change of an assigned ticket writes one shard, where it wrote three sharded counters.
 */
const AGENT_QUEUES = { family: 'agent_queues', sharded: true };

/**
 * How tickets are indexed, declared as data: the dimensions a ticket is listed under (each with a posting list,
 * newest first, an exact counter and packed blocks), the queues, the open work per agent (least-busy) and the
 * search terms. The engine (lib/data/index/) does the rest. See docs/data-model.md, "Tickets".
 */
export const tickets = indexedEntity<Ticket, TicketFilter>({
  entity: 'TICKET',
  order: (t) => ({ createdMicros: parseTimestamp(t.createdAt), number: t.number }),
  dimensions: [
    { name: 'status', values: (t) => [t.status], bounded: true, queueTag: 's', domain: TICKET_STATUSES },
    { name: 'priority', values: (t) => [t.priority], bounded: true, queueTag: 'p', domain: PRIORITIES },
    // Queues: two or three of status, priority and assignee together (the urgent open tickets, an agent's open
    // ones, its urgent open ones), so such a page is O(per_page) and its total one item. Counted in the `counts` cell every change writes anyway
    // (issue 40: a counter item less a create). Status and priority keep no postings of their own: `status#open`
    // lists `queue#s=open#p=…` merged over the four priorities (issue 40: a change moving both moves one posting
    // where it moved three).
    { queue: ['status', 'priority'], countedIn: { family: COUNTS }, listsParts: true },
    {
      name: 'assignee',
      values: (t) => (t.assignee ? [String(t.assignee.id)] : []),
      bounded: true,
      countedIn: AGENT,
      queueTag: 'a',
    },
    // An agent's tickets of one status (its own view, the hand-back's finder), and of one status and priority (its
    // urgent open ones). An agent's tickets of one priority whatever their status are intersected from its blocks
    // and the priority's (issue 40: a queue fewer, 4 WU less an update moving priority and agent; at 100,000
    // tickets such a page reads ~300 read units in 3 round trips where the queue read 19 in 2: docs/capacity.md).
    { queue: ['status', 'assignee'], countedIn: { family: AGENT_QUEUES, by: 'assignee' } },
    { queue: ['status', 'priority', 'assignee'], countedIn: { family: AGENT_QUEUES, by: 'assignee' } },
    // Unassigned tickets by team (`none`: without one) and all of them (`any`): a team's queue is one bounded
    // dimension, so `assignee=unassigned&team_id=…&sort=queue` reads O(per_page) of its own sorted postings
    // (IndexDeclaration.sortedIn) and its total from the counts cell. An assigned ticket writes nothing more.
    {
      name: 'waiting',
      values: (t) => (t.assignee ? [] : ['any', t.team ? String(t.team.id) : 'none']),
      bounded: true,
    },
    // Organizations are many, and their ids the service's own: a counter item each, readable in keys (as a deal's
    // contact). A ticket without one writes nothing more.
    {
      name: 'organization',
      values: (t) => (t.organization ? [String(t.organization.id)] : []),
      bounded: false,
      readable: true,
      // An organization may hold many of the account's tickets: intersected from blocks (a requester's address,
      // narrow, keeps none).
      blocks: true,
    },
    // `sla=breached`: a clock whose breach the runner wrote and that still runs (lib/tickets/owed-breaches.ts); the
    // breach commit puts the ticket in, the reply or resolution that completes the clock takes it out.
    { name: 'sla', values: (t) => (isBreached(t) ? ['breached'] : []), bounded: true },
    // Unbounded: text a person wrote, named in keys by the account's keyed hash (an address's is its erasure
    // hash: lib/data/index/keyed.ts).
    {
      name: 'email',
      values: (t) => (t.requester.erased ? [] : [t.requester.email.toLowerCase()]),
      bounded: false,
    },
    {
      name: 'cf',
      values: (t) =>
        Object.entries(t.customFields).map(([key, value]) => customFieldValue(key, customFieldText(value))),
      bounded: false,
      // A value such as `plan=gold` may hold a third of the tickets: intersected from its blocks.
      blocks: true,
    },
  ],
  // Open, pending and in-progress tickets per agent: what least-busy assignment compares, kept beside the
  // agent's ticket count in the agent's own item.
  statsCounters: {
    busy: { adds: (t) => (t.assignee && isOpenWork(t) ? { [t.assignee.id]: 1 } : {}), in: AGENT },
    // A team's open tickets, assigned or not: what its deletion conditions on.
    open: { adds: (t) => (t.team && BUSY_STATUSES.includes(t.status) ? { [t.team.id]: 1 } : {}), in: TEAM },
  },
  // The soonest service-level due time still to watch, or the next time-rule moment when sooner: the ticket's
  // entry in the due index, which the due runner reads (lib/tickets/breaches.ts: breaches, then time rules).
  due: (t) => soonest(nextDueUs(t), t.ruleDueAt ? parseTimestamp(t.ruleDueAt) : undefined),
  // `sort=due`: soonest uncompleted due time first, none last, then newest first (lib/data/index/list.ts).
  // `sort=queue`: the order a queue is served in (lib/tickets/types.ts, queueSortValue), kept in `waiting` only.
  sorts: { due: (t) => dueSortValue(t), queue: (t) => queueSortValue(t) },
  sortedIn: { queue: ['waiting'] },
  // A ticket's item is mostly its description: stored packed when that shortens it (lib/data/store/packed.ts).
  packed: ['description'],
  search: (t) => ticketTerms(t.subject, t.reference, t.number, t.requester.erased ? '' : t.requester.email),
  filter: (q) => ({
    status: q.status ? [q.status] : [],
    priority: q.priority ? [q.priority] : [],
    assignee: q.assigneeId !== undefined ? [String(q.assigneeId)] : [],
    waiting: q.unassigned ? [String(q.unassigned.teamId ?? 'any')] : [],
    organization: q.organizationId !== undefined ? [String(q.organizationId)] : [],
    email: q.requesterEmail !== undefined ? [q.requesterEmail.toLowerCase()] : [],
    sla: q.slaBreached ? ['breached'] : [],
    cf: q.customFields.map(([key, text]) => customFieldValue(key, text)),
  }),
});

/**
 * The words a ticket is found by (decisions.md, "Search words"): prefix terms, reference and e-mail terms (whole, or
 * from the domain) first, then the subject's words; and its bare number, matched exactly. The term rules shared
 * by every searchable entity are in lib/search.ts.
 */
function ticketTerms(subject: string, reference: string, number: number, email: string): SearchTerms {
  const fixed = [reference.toLowerCase(), ...(email ? emailTerms(email) : [])];
  const useful = usefulTerms([...fixed, ...textWords(subject)]);
  const ordered = [
    ...useful.filter((t) => fixed.some((f) => f.startsWith(t))),
    ...useful.filter((t) => !fixed.some((f) => f.startsWith(t))),
  ];
  return { prefixes: ordered, number: String(number) };
}

/** The sooner of two due times (undefined: none). */
const soonest = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/** A custom field's value as its dimension has it: `plan#gold` (keys name it by its keyed hash). */
const customFieldValue = (key: string, text: string) => `${key}#${text}`;

/**
 * Ticket dimensions by name, as a filter names them (the tests and the reindex's checks spell them this way):
 * the declaration's own naming, not a second spelling of it. A keyed dimension (an address, a custom field's
 * value) is named for one account.
 */
const named = (
  filter: Omit<TicketFilter, 'customFields'> & Partial<Pick<TicketFilter, 'customFields'>>,
  accountId = '',
) => filterDimensions(tickets.index.declaration, accountId, { customFields: [], ...filter })[0] as string;
export const dimension = {
  all: ALL,
  status: (status: TicketStatus) => named({ status }),
  priority: (priority: Priority) => named({ priority }),
  assignee: (assigneeId: number) => named({ assigneeId }),
  organization: (organizationId: number) => named({ organizationId }),
  email: (accountId: string, requesterEmail: string) => named({ requesterEmail }, accountId),
  customField: (accountId: string, key: string, text: string) =>
    named({ customFields: [[key, text]] }, accountId),
  slaBreached: () => named({ slaBreached: true }),
  queue: (status: TicketStatus | undefined, priority: Priority | undefined, assigneeId: number | undefined) =>
    named({
      ...(status ? { status } : {}),
      ...(priority ? { priority } : {}),
      ...(assigneeId !== undefined ? { assigneeId } : {}),
    }),
};
