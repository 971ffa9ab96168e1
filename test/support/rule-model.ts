/**
 * A plain model of the contract's rules (decisions.md, "Business rules", with docs/rules.md's choices where it is
 * silent), for the model-based test of lib/rules/. Written from the rules, not from lib/: it imports nothing of the
 * implementation, reads rules in their API form (snake_case, as a client sends them) and a ticket as a flat record,
 * and runs the contract's own wording: rules in position order (ties by id); "when a rule fires, the rules before
 * it that did not fire are looked at again"; each fires once; at most 10.
 */

export type Value = string | number | boolean | null;
export interface MCondition {
  field: string;
  op: string;
  value?: Value | Value[];
}
export interface MAction {
  type: string;
  field?: string;
  value?: Value;
  tags?: string[];
  body?: string;
  agent_id?: number;
}
export interface MRule {
  id: number;
  position: number;
  active: boolean;
  on: string;
  conditions: { all: MCondition[]; any: MCondition[] };
  actions: MAction[];
}
export interface MTicket {
  reference: string;
  requesterName: string | null;
  subject: string;
  description: string;
  email: string;
  channel: string;
  status: string;
  priority: string;
  category: string | null;
  team: number | null;
  assignee: number | null;
  org: number | null;
  tags: string[];
  custom: Record<string, Value>;
}
export interface MChange {
  kind: 'create' | 'update' | 'message' | 'macro';
  before: MTicket | null;
  after: MTicket;
  channel: 'api' | 'email';
  automatic: boolean;
  imported: boolean;
  repliesLastHour: number;
  message?: { author: string; visibility: string; body: string };
}
export interface MResult {
  ticket: MTicket;
  fired: number[];
  stopped: boolean;
  skipped: [number, string][];
  messages: [number, string, string, number | null][];
  /** Per rule looked at, in order: `fired`, `skipped`, `stopped`, or the path of its first failing condition. */
  outcomes: [number, string][];
}

export const TEAMS: Record<number, string> = { 1: 'Billing', 2: 'Tech' };
/** Active agents (agent 3 exists but is inactive). */
export const AGENTS: Record<number, string> = { 1: 'Ann', 2: 'Bob' };
export const AGENT_TEAMS: Record<number, number[]> = { 1: [1], 2: [2] };
export const CATEGORIES = ['billing', 'tech'];
export const ORGS = [7];

const low = (x: unknown) => (typeof x === 'string' ? x.toLowerCase() : x);
const text = (x: Value) => (typeof x === 'string' ? x : JSON.stringify(x));

function read(t: MTicket, field: string, change: MChange): Value | string[] {
  const flat: Record<string, Value | string[]> = {
    status: t.status,
    priority: t.priority,
    channel: t.channel,
    via: change.kind === 'macro' ? 'macro' : change.channel,
    category: t.category,
    team_id: t.team,
    assignee_id: t.assignee,
    organization_id: t.org,
    tags: t.tags,
    subject: t.subject,
    description: t.description,
    requester_email: t.email,
    'message.author': change.message?.author ?? null,
    'message.visibility': change.message?.visibility ?? null,
    'message.body': change.message?.body ?? null,
  };
  if (field in flat) return flat[field] as Value | string[];
  return t.custom[field.replace('custom_fields.', '')] ?? null;
}

function eq(a: Value | string[], b: Value, custom: boolean): boolean {
  if (Array.isArray(a)) return a.some((tag) => low(tag) === low(b));
  if (a === null || b === null) return a === b;
  return custom ? text(a).toLowerCase() === text(b).toLowerCase() : low(a) === low(b);
}

function holds(c: MCondition, now: MTicket, change: MChange): boolean {
  const custom = c.field.startsWith('custom_fields.');
  const a = read(now, c.field, change);
  const one = (Array.isArray(c.value) ? c.value[0] : c.value) ?? null;
  const list = Array.isArray(c.value) ? c.value : [];
  const has = (x: Value | string[]) => (Array.isArray(x) ? x.length > 0 : x !== null && x !== '');
  const within = (x: Value | string[]) =>
    Array.isArray(x)
      ? x.some((tag) => low(tag) === low(one))
      : x !== null && text(x).toLowerCase().includes(String(one).toLowerCase());
  if (c.op === 'is') return eq(a, one, custom);
  if (c.op === 'is_not') return !eq(a, one, custom);
  if (c.op === 'in') return list.some((x) => eq(a, x, custom));
  if (c.op === 'not_in') return !list.some((x) => eq(a, x, custom));
  if (c.op === 'contains') return within(a);
  if (c.op === 'not_contains') return !within(a);
  if (c.op === 'present') return has(a);
  if (c.op === 'absent') return !has(a);
  if (!change.before) return false;
  const b = read(change.before, c.field, change);
  const sameTags = (x: string[], y: string[]) =>
    x.length === y.length && x.every((tag) => y.some((u) => low(u) === low(tag)));
  const changed =
    Array.isArray(a) && Array.isArray(b) ? !sameTags(a, b) : !eq(b as Value, a as Value, custom);
  if (c.op === 'changed') return changed;
  if (!changed) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return c.op === 'changed_to'
      ? eq(a, one, false) && !eq(b, one, false)
      : eq(b, one, false) && !eq(a, one, false);
  }
  return c.op === 'changed_to' ? eq(a, one, custom) : eq(b as Value, one, custom);
}

function firstFailing(rule: MRule, now: MTicket, change: MChange): string | null {
  const i = rule.conditions.all.findIndex((c) => !holds(c, now, change));
  if (i >= 0) return `conditions.all.${i}`;
  if (rule.conditions.any.length > 0 && !rule.conditions.any.some((c) => holds(c, now, change))) {
    return 'conditions.any.0';
  }
  return null;
}

const STATUS_OF_CLOSED = 'closed';

/** One action on the ticket: the ticket after, or the reason it was skipped. */
function act(
  t: MTicket,
  a: MAction,
  replyOk: () => string | null,
): { t: MTicket; skip?: string; msg?: boolean } {
  if (t.status === STATUS_OF_CLOSED) return { t, skip: 'closed' };
  if (a.type === 'add_tags') {
    const tags = [...t.tags];
    for (const tag of a.tags ?? []) if (!tags.some((x) => low(x) === low(tag))) tags.push(tag);
    return { t: { ...t, tags } };
  }
  if (a.type === 'remove_tags') {
    return { t: { ...t, tags: t.tags.filter((x) => !(a.tags ?? []).some((y) => low(y) === low(x))) } };
  }
  if (a.type === 'note' || a.type === 'reply') {
    if (a.agent_id !== undefined && !(a.agent_id in AGENTS)) return { t, skip: 'gone' };
    const refused = a.type === 'reply' ? replyOk() : null;
    return refused ? { t, skip: refused } : { t, msg: true };
  }
  const v = a.value ?? null;
  switch (a.field) {
    case 'status':
      return { t: { ...t, status: v as string } };
    case 'priority':
      return { t: { ...t, priority: v as string } };
    case 'team_id':
      return { t: { ...t, team: v as number | null } };
    case 'assignee_id': {
      if (v !== 'auto') return { t: { ...t, assignee: v as number | null } };
      const ids = Object.keys(AGENTS).map(Number);
      const pick = ids.find((id) => t.team !== null && AGENT_TEAMS[id]?.includes(t.team)) ?? ids[0] ?? null;
      return { t: { ...t, assignee: pick } };
    }
    case 'category':
      return { t: { ...t, category: v as string | null } };
    case 'organization_id':
      return { t: { ...t, org: v as number | null } };
    default: {
      const custom = { ...t.custom };
      const key = (a.field ?? '').replace('custom_fields.', '');
      if (v === null) delete custom[key];
      else custom[key] = v;
      return { t: { ...t, custom } };
    }
  }
}

function render(body: string, t: MTicket, agent: number | undefined): string {
  const values: Record<string, string> = {
    'ticket.reference': t.reference,
    'ticket.subject': t.subject,
    'ticket.status': t.status,
    'requester.name': t.requesterName ?? '',
    'agent.name': AGENTS[agent ?? t.assignee ?? 0] ?? '',
  };
  return body.replace(/\{\{\s*([a-z.]+)\s*\}\}/g, (_, name: string) => values[name] ?? '');
}

export function modelEvaluate(rules: MRule[], change: MChange): MResult {
  let t = change.after;
  if (change.imported)
    return { ticket: t, fired: [], stopped: false, skipped: [], messages: [], outcomes: [] };
  const kind = { create: 'created', update: 'updated', macro: 'updated', message: 'message' }[change.kind];
  const ordered = rules
    .filter((r) => r.active && r.on === kind)
    .sort((a, b) => (a.position === b.position ? a.id - b.id : a.position - b.position));
  const fired: number[] = [];
  const lookedDone = new Set<number>();
  const skipped: [number, string][] = [];
  const pending: [number, string, string, number | undefined][] = [];
  let replies = change.repliesLastHour;
  const replyOk = () => {
    if (change.automatic) return 'automatic_mail';
    if (replies >= 3) return 'replies_per_hour';
    replies++;
    return null;
  };
  let stopped = false;
  let i = 0;
  while (i < ordered.length) {
    const rule = ordered[i] as MRule;
    if (lookedDone.has(rule.id) || firstFailing(rule, t, change) !== null) {
      i++;
      continue;
    }
    if (fired.length === 10) {
      stopped = true;
      break;
    }
    lookedDone.add(rule.id);
    let applied = false;
    for (const a of rule.actions) {
      const out = act(t, a, replyOk);
      t = out.t;
      if (out.skip) skipped.push([rule.id, out.skip]);
      else applied = true;
      if (out.msg) pending.push([rule.id, a.type, a.body ?? '', a.agent_id]);
    }
    if (applied) fired.push(rule.id);
    i = 0; // the rules before it that did not fire are looked at again
  }
  const messages = pending.map(([id, type, body, agent]): MResult['messages'][number] => [
    id,
    type,
    render(body, t, agent),
    agent ?? t.assignee,
  ]);
  const outcomes = ordered.map((r): [number, string] => {
    if (fired.includes(r.id)) return [r.id, 'fired'];
    if (lookedDone.has(r.id)) return [r.id, 'skipped'];
    return [r.id, firstFailing(r, t, change) ?? 'stopped'];
  });
  return { ticket: t, fired, stopped, skipped, messages, outcomes };
}
