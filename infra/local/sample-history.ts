import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './environment.ts';

/**
 * Writes examples/sample-history.ndjson: a made-up helpdesk's history in deskpipe's import format
 * (docs/import-format.md) for README's import walk. No real data: the people, companies and conversations are
 * drawn from the lists below by a seeded generator, so the file is the same on every run
 * (`npx tsx infra/local/sample-history.ts`; the output is committed). Two of its agents are the demo account's
 * (matched by e-mail), its teams are the demo's by name, the rest is new.
 */
const TICKETS = 300;
const OUT = join(ROOT, 'examples', 'sample-history.ndjson');

/** mulberry32: a small seeded generator, enough for made-up data. */
function seeded(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[int(0, items.length - 1)] as T;
  return { next, int, pick };
}

const FIRST = ['Aino', 'Bram', 'Chiara', 'Dmitri', 'Esi', 'Farid', 'Greta', 'Hiro', 'Ines', 'Jonas', 'Kemi'];
const LAST = [
  'Aalto',
  'Bakker',
  'Costa',
  'Dahl',
  'Eze',
  'Fischer',
  'Garcia',
  'Holm',
  'Ito',
  'Jansen',
  'Kowal',
];
const COMPANIES = [
  'Alder Cafe',
  'Brightwater Labs',
  'Cobalt Cycles',
  'Dune Outfitters',
  'Elm Street Books',
  'Fjord Freight',
  'Granite Gyms',
  'Harbor Dental',
  'Ivy Print Shop',
  'Juniper Travel',
];
const PROBLEMS = [
  ['Invoice shows the wrong amount', 'billing', 'Our latest invoice charges us for {n} seats; we have {m}.'],
  ['Card declined on renewal', 'billing', 'The renewal failed this morning although the card is valid.'],
  ['Export to CSV is empty', 'bug', 'The CSV export downloads, but it has only the header row.'],
  ['Login link expired at once', 'bug', 'The sign-in link says it expired the moment I open it.'],
  ['Webhook deliveries failing', 'integrations', 'Our endpoint has had no events since {n}:00 this morning.'],
  ['Calendar sync duplicates events', 'integrations', 'Every meeting shows up {n} times after the sync.'],
  ['How do I add a colleague?', 'onboarding', 'We hired {n} new people: how do they get an account?'],
  ['Where do I change our logo?', 'onboarding', 'Our brand changed; where is the logo set?'],
  ['Report totals do not match', 'bug', 'The monthly report says {n}, the dashboard says {m}.'],
  ['Refund for a double charge', 'billing', 'We were charged twice on the {n}th: please refund one.'],
] as const;
const AGENT_REPLIES = [
  'Thanks for writing in. Could you send the account number and a screenshot?',
  'I can see it on our side too: our team is on it, and I will write again today.',
  'That is fixed now: could you try again and tell me whether it works?',
  'I have credited the difference; it shows on your next invoice.',
  'Here is the guide for that: Settings, then Team, then Invite.',
];
const NOTES = ['Same as last week, different account.', 'Asked engineering: a known bug, fix next release.'];
const FOLLOW_UPS = [
  'Here is the screenshot.',
  'Still the same, sorry.',
  'It works now, thank you!',
  'Any news?',
];
const STATUSES = ['closed', 'closed', 'resolved', 'resolved', 'resolved', 'open', 'pending', 'in_progress'];
const PRIORITIES = ['low', 'medium', 'medium', 'high', 'urgent', null] as const;

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const slug = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '');

function people(r: ReturnType<typeof seeded>) {
  const lines: object[] = [
    { type: 'team', id: 'g-1', name: 'Billing' },
    { type: 'team', id: 'g-2', name: 'Technical' },
    { type: 'team', id: 'g-3', name: 'Customer Success' },
  ];
  // Two of the demo account's agents (matched by e-mail), one new, one who left.
  const agents = [
    ['a-1', 'ann.lee@northwind.test', 'Ann Lee', true, ['g-1']],
    ['a-2', 'ivy.chen@northwind.test', 'Ivy Chen', true, ['g-2']],
    ['a-3', 'noor.haddad@northwind.test', 'Noor Haddad', true, ['g-2', 'g-3']],
    ['a-4', 'pim.vos@northwind.test', 'Pim Vos', false, ['g-3']],
  ] as const;
  for (const [id, email, name, active, teams] of agents)
    lines.push({ type: 'agent', id, email, name, active, team_ids: teams });
  for (const [i, name] of COMPANIES.entries())
    lines.push({ type: 'organization', id: `o-${i + 1}`, name, domains: [`${slug(name)}.test`] });
  const contacts: { id: string; org: string | null }[] = [];
  for (let i = 1; i <= 80; i++) {
    const [first, last] = [r.pick(FIRST), r.pick(LAST)];
    const org = i % 5 === 0 ? null : r.int(1, COMPANIES.length);
    const domain = org === null ? 'mailbox.test' : `${slug(COMPANIES[org - 1] ?? '')}.test`;
    const email = `${slug(first)}.${slug(last)}${i}@${domain}`;
    const orgId = org === null ? null : `o-${org}`;
    lines.push({ type: 'contact', id: `c-${i}`, email, name: `${first} ${last}`, organization_id: orgId });
    contacts.push({ id: `c-${i}`, org: orgId });
  }
  return { lines, agents: agents.map((a) => a[0]), contacts };
}

function ticket(
  r: ReturnType<typeof seeded>,
  n: number,
  who: ReturnType<typeof people>,
  messageCount: number | undefined,
) {
  const [subject, category, opening] = r.pick(PROBLEMS);
  const requester = r.pick(who.contacts);
  const agent = r.pick(who.agents);
  const status = r.pick(STATUSES);
  const created = Date.UTC(2025, 0, 1) + n * 26 * 3_600_000 + r.int(0, 20) * 3_600_000;
  let at = created;
  const fill = (text: string) =>
    text.replace('{n}', String(r.int(2, 12))).replace('{m}', String(r.int(1, 9)));
  const messages: object[] = [
    {
      id: `m-${n}-1`,
      author: { type: 'contact', id: requester.id },
      body: fill(opening),
      created_at: iso(at),
    },
  ];
  if (n % 4 === 0) Object.assign(messages[0] as object, { message_id: `<sample-${n}@mailbox.test>` });
  for (let k = 2; k <= (messageCount ?? r.int(2, 6)); k++) {
    at += r.int(1, 30) * 3_600_000;
    const internal = k > 2 && r.next() < 0.2;
    const byAgent = internal || k % 2 === 0;
    messages.push({
      id: `m-${n}-${k}`,
      author: byAgent ? { type: 'agent', id: agent } : { type: 'contact', id: requester.id },
      body: internal ? r.pick(NOTES) : byAgent ? r.pick(AGENT_REPLIES) : r.pick(FOLLOW_UPS),
      ...(internal ? { internal: true } : {}),
      created_at: iso(at),
    });
  }
  const done = status === 'resolved' || status === 'closed';
  const team = category === 'billing' ? 'g-1' : category === 'onboarding' ? 'g-3' : 'g-2';
  return {
    type: 'ticket',
    id: String(10_000 + n),
    subject,
    status,
    priority: r.pick(PRIORITIES),
    created_at: iso(created),
    updated_at: iso(at),
    ...(done ? { resolved_at: iso(at) } : {}),
    ...(status === 'closed' ? { closed_at: iso(at + 4 * 86_400_000) } : {}),
    tags: [category, ...(r.next() < 0.3 ? ['vip'] : [])],
    requester: { id: requester.id },
    assignee_id: status === 'open' && r.next() < 0.3 ? null : agent,
    team_id: team,
    organization_id: requester.org,
    custom_fields: { 'Order number': `ORD-${String(r.int(1, 99_999)).padStart(5, '0')}` },
    messages,
  };
}

/**
 * The history's lines (seed 42): its people, then `tickets` tickets, each with `messages` messages (default 2 to 6,
 * drawn). `npm run bench -- --imports` imports thousands made so, 5 messages each.
 */
export function sampleHistory(tickets: number, messages?: number): string {
  const r = seeded(42);
  const who = people(r);
  const lines = [...who.lines, ...Array.from({ length: tickets }, (_, i) => ticket(r, i + 1, who, messages))];
  return `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync(OUT, sampleHistory(TICKETS));
  console.log(`${OUT}: ${TICKETS} tickets`);
}
