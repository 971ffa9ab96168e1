import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handBackPass } from '#lib/people/handback-runner.ts';
import { queuePass } from '#lib/tickets/queue-runner.ts';
import { useManualClock } from '#test/support/clock.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { type AgentShown, peopleAccount } from '#test/support/people.ts';

/**
 * Random sequences of agent status, capacity, activity and membership changes (from both sides: an agent's
 * `team_ids`, a team's `agent_ids`) and ticket changes (create, resolve, reassign, delete), sent through the HTTP
 * API on a fresh least-busy account per run; after each, the queue and hand-back runners run until nothing is due
 * (the manual clock stands still), and every ticket's assignee and status, every agent's `open_tickets` and each
 * queue (`assignee=unassigned&team_id=…&sort=queue`) must be the model's. Last, one `ticket.updated` per change the
 * model counts: each hand-over and hand-back once, never twice.
 *
 * The model is written from decisions.md ("Automatic assignment", "People: agents, teams and organizations") and
 * imports nothing of lib/'s assignment: candidates are the available agents of the ticket's team when it has an
 * active agent, else of the account; least-busy takes the fewest open tickets among those below capacity, ties
 * to the lowest id; a ticket nobody qualifies for waits; an agent who frees up (comes back, gets more room, a ticket
 * of theirs leaves their open work, joins a team) takes the head of their queues (urgent first, then the oldest)
 * one at a time until full or empty; retiring or leaving a team hands the agent's open tickets (of that team) back,
 * each to the method's pick without them, else to the queue. Each step frees at most one agent (served before the
 * teams it left agentless are woken, as the runner serves them), so the order the runner serves freed agents in
 * never matters and the model is exact, but for one choice the contract leaves open:
 * a page of a hand-back is handed back at once (docs/decisions.md, "Handing back"), so its picks land in some
 * order; the model finds the order that gives what the service shows, each pick least-busy as the earlier ones
 * left the agents, and fails when there is none. A freed agent takes from every queue whose tickets the
 * team rule gives them, a team's with no active agent too. One documented gap is modelled as such (docs/decisions.md,
 * "The queue", "Not done in this slice"): a team losing its last active agent wakes nobody, so its tickets may wait
 * beside an idle agent until one frees up; the promise that nobody waits beside room leaves those out.
 */
const gateway = useGateway();
const clock = useManualClock();

const PRIORITIES = ['urgent', 'high', 'medium', 'low'] as const;
type Priority = (typeof PRIORITIES)[number];
/** Team indexes: 0 Tech, 1 Billing; a ticket's `queue` 2 is no team. */
const TEAMS = ['Tech', 'Billing'] as const;
const AGENTS = 4;

const FILE = {
  auto_assignment: { enabled: true, method: 'least_busy' },
  teams: TEAMS.map((name) => ({ name })),
  agents: [['Tech'], ['Tech', 'Billing'], ['Billing'], []].map((teams, i) => ({
    email: `m${i}@desk.test`,
    name: `M${i}`,
    teams,
  })),
  categories: TEAMS.map((name) => ({ slug: name.toLowerCase(), name, default_team: name })),
};

const agentArb = fc.nat(AGENTS - 1);
const stepArb = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      priority: fc.constantFrom(...PRIORITIES),
      queue: fc.nat(2),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('resolve' as const), ticket: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('reassign' as const), ticket: fc.nat(), agent: agentArb }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), ticket: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('status' as const),
      agent: agentArb,
      status: fc.constantFrom('available', 'away', 'available', 'offline'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('capacity' as const),
      agent: agentArb,
      capacity: fc.constantFrom(1, 2, 3, 1, null),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('active' as const), agent: agentArb, active: fc.boolean() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('teams' as const),
      agent: agentArb,
      teams: fc.subarray([0, 1]),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('member' as const), team: fc.nat(1), agent: agentArb }),
  },
);
/** Each agent's capacity and status before the steps. */
const startArb = fc.array(
  fc.record({
    capacity: fc.constantFrom(1, 2, 1),
    status: fc.constantFrom('available', 'away', 'available', 'offline'),
  }),
  { minLength: AGENTS, maxLength: AGENTS },
);
type Listed = { uuid: string; status: string; assignee: { id: number } | null };
type Step = typeof stepArb extends fc.Arbitrary<infer S> ? S : never;
type Start = typeof startArb extends fc.Arbitrary<infer S> ? S : never;

interface MAgent {
  id: number;
  active: boolean;
  status: string;
  capacity: number | null;
  teams: number[];
}
interface MTicket {
  uuid: string;
  seq: number;
  priority: Priority;
  team: number | null;
  status: 'open' | 'resolved';
  assignee: number | null;
  deleted: boolean;
  /** The `ticket.updated` events its changes wrote. */
  updates: number;
}

/** decisions.md's rules over plain data: no lib/ code. */
class Model {
  tickets: MTicket[] = [];
  constructor(public agents: MAgent[]) {}

  agent = (id: number) => this.agents.find((a) => a.id === id) as MAgent;
  live = () => this.tickets.filter((t) => !t.deleted);
  openWork = (id: number) => this.live().filter((t) => t.status === 'open' && t.assignee === id).length;
  available = (a: MAgent) => a.active && a.status === 'available';
  hasRoom = (a: MAgent) => a.capacity === null || this.openWork(a.id) < a.capacity;
  waiting = (t: MTicket) => !t.deleted && t.status === 'open' && t.assignee === null;

  /** The team rule: a team with an active agent keeps its tickets to its agents; one without falls back. */
  candidates(team: number | null): MAgent[] {
    const active = this.agents.filter((a) => a.active);
    const ofTeam = team === null ? [] : active.filter((a) => a.teams.includes(team));
    return (ofTeam.length > 0 ? ofTeam : active).filter(this.available).sort((a, b) => a.id - b.id);
  }

  /** Least-busy among the candidates below their capacity (ties: the lowest id); `without` never. */
  pick(team: number | null, without?: number): number | null {
    const open = this.candidates(team).filter((a) => a.id !== without && this.hasRoom(a));
    const fewest = Math.min(...open.map((a) => this.openWork(a.id)));
    return open.find((a) => this.openWork(a.id) === fewest)?.id ?? null;
  }

  /** Urgent first, then the oldest (creation order). */
  static queueOrder = (a: MTicket, b: MTicket) =>
    PRIORITIES.indexOf(a.priority) - PRIORITIES.indexOf(b.priority) || a.seq - b.seq;

  /** A waiting ticket an agent may take: one whose candidates (the team rule, a fallback team's too) include them. */
  takesFrom = (a: MAgent, t: MTicket) => this.candidates(t.team).some((c) => c.id === a.id);
  /** A team with no active agent: its tickets are the account's agents' (the team rule's fallback). */
  agentless = (team: number | null) =>
    team !== null && !this.agents.some((a) => a.active && a.teams.includes(team));

  /** An agent who may have freed up takes the head of their queues, one at a time, until full or none waits. */
  serve(id: number) {
    const a = this.agent(id);
    while (this.available(a) && this.hasRoom(a)) {
      const head = this.live()
        .filter((t) => this.waiting(t) && this.takesFrom(a, t))
        .sort(Model.queueOrder)[0];
      if (!head) return;
      head.assignee = id;
      head.updates++;
    }
  }

  /**
   * What the service shows after the step (uuid → assignee), read before a hand-back is modelled: a page of the
   * agent's tickets is handed back at once (docs/decisions.md, "Handing back"), each commit guarded by its new
   * agent's cell, so the picks land in some order, not necessarily the oldest first.
   */
  seen: Map<string, number | null> | undefined;

  /**
   * The agent's open tickets (of `team`; null: all) back, each to the method's pick without them: in the order
   * that gives what the service shows when there is one (each pick least-busy as the earlier ones left the
   * agents), else the oldest first (and the comparison then fails).
   */
  handBack(id: number, team: number | null): number {
    const owed = this.live()
      .filter((t) => t.assignee === id && t.status === 'open' && (team === null || t.team === team))
      .sort((x, y) => x.seq - y.seq);
    for (const t of (this.seen && this.orderShown(owed, id, this.seen)) ?? owed) {
      t.assignee = this.pick(t.team, id);
      t.updates++;
    }
    return owed.length;
  }

  /** An order of `owed` whose least-busy picks, one after the other, are what `seen` shows; undefined if none. */
  private orderShown(
    owed: MTicket[],
    without: number,
    seen: Map<string, number | null>,
  ): MTicket[] | undefined {
    if (owed.length === 0) return [];
    for (const t of owed) {
      const pick = this.pick(t.team, without);
      if (pick !== (seen.get(t.uuid) ?? null)) continue;
      const before = t.assignee;
      t.assignee = pick;
      const rest = this.orderShown(
        owed.filter((x) => x !== t),
        without,
        seen,
      );
      t.assignee = before;
      if (rest) return [t, ...rest];
    }
    return undefined;
  }

  /** A membership change: what the agent left is handed back; they are served when they joined or lost work. */
  setTeams(id: number, teams: number[]) {
    const a = this.agent(id);
    const left = a.teams.filter((t) => !teams.includes(t));
    const joined = teams.filter((t) => !a.teams.includes(t));
    a.teams = [...teams].sort((x, y) => x - y);
    const handed = left.reduce((n, t) => n + this.handBack(id, t), 0);
    // The agent's turn before the teams' wake (docs/decisions.md, "A team left with no active agent wakes its queue").
    if (joined.length > 0 || handed > 0) this.serve(id);
    this.wake(left);
  }

  /**
   * Teams a change left with no active agent wake their queues (docs/decisions.md, "A team left with no active
   * agent wakes its queue"): team by team, each waiting ticket in queue order to the pick among the account's
   * agents, until nobody has room.
   */
  wake(teams: number[]) {
    for (const team of [...teams].sort((x, y) => x - y)) {
      if (!this.agentless(team)) continue;
      const queue = this.live()
        .filter((t) => this.waiting(t) && t.team === team)
        .sort(Model.queueOrder);
      for (const t of queue) {
        const pick = this.pick(team);
        if (pick === null) break;
        t.assignee = pick;
        t.updates++;
      }
    }
  }

  /** The decisions.md promise the model must itself keep: nobody waits while an agent who may take it has room. */
  idleBesideWaiting(): string[] {
    return this.live()
      .filter((t) => this.waiting(t) && !this.agentless(t.team))
      .flatMap((t) =>
        this.agents
          .filter((a) => this.available(a) && this.hasRoom(a) && this.takesFrom(a, t))
          .map((a) => `${t.uuid} waits while M${a.id} has room`),
      );
  }
}

/**
 * The runners until nothing is due, on a clock that stands still but for a failed step's retry (a hand-back
 * ticket that lost three races to its page's others: handback.ts), which is waited out on the clock.
 */
async function quiesce() {
  for (let round = 0; round < 20; round++) {
    const back = await handBackPass();
    const queue = await queuePass();
    if (back.failed + queue.failed > 0) await clock().advance(5_000);
    else if (back.done === 0 && queue.assigned === 0 && !back.more && !queue.more) return;
  }
  throw new Error('the runners did not come to rest');
}

/**
 * Runs once found failing, replayed first on every run. Seed 1333772924: M2 leaves Billing, the last of its active
 * agents; the hand-back gives M2's Billing ticket to nobody (everyone full), which frees M2, and the change woke
 * Billing. The runner served M2's turn first (the head of M2's queues: the account's older urgent ticket) where the
 * model woke Billing first (its urgent ticket to the account's pick, M2). The runner's order then followed the due
 * keys; now it serves agents before the wake, always, and the model does too.
 */
const EXAMPLES: [Start, Step[]][] = [
  [
    [
      { capacity: 1, status: 'available' },
      { capacity: 1, status: 'available' },
      { capacity: 2, status: 'available' },
      { capacity: 1, status: 'available' },
    ],
    [
      { kind: 'create', priority: 'urgent', queue: 0 },
      { kind: 'create', priority: 'low', queue: 1 },
      { kind: 'status', agent: 1, status: 'offline' },
      { kind: 'member', team: 1, agent: 1 },
      { kind: 'create', priority: 'urgent', queue: 0 },
      { kind: 'reassign', ticket: 714977435, agent: 2 },
      { kind: 'create', priority: 'urgent', queue: 2 },
      { kind: 'create', priority: 'urgent', queue: 2 },
      { kind: 'create', priority: 'high', queue: 2 },
      { kind: 'create', priority: 'urgent', queue: 1 },
      { kind: 'status', agent: 0, status: 'available' },
      { kind: 'create', priority: 'high', queue: 2 },
      { kind: 'member', team: 1, agent: 2 },
    ],
  ],
];
const SEED = Number(process.env.PEOPLE_MODEL_SEED ?? Date.now() % 2 ** 31);
/** Runs: 5 keep the file near 25 s under load; PEOPLE_MODEL_RUNS=50 searches longer by hand. */
const RUNS = Number(process.env.PEOPLE_MODEL_RUNS ?? 5);

describe('people and the queue against a model of the spec', () => {
  it(
    'keeps assignments, open_tickets and every queue equal to the model after each step',
    async () => {
      console.log(`people-model seed ${SEED} (PEOPLE_MODEL_SEED=${SEED} replays it)`);
      await fc.assert(
        fc.asyncProperty(
          fc.noBias(startArb),
          // Unbiased: fast-check's bias towards small values aims every resolve and reassign at the first ticket.
          fc.noBias(fc.array(stepArb, { minLength: 12, maxLength: 24 })),
          async (start, steps) => {
            const { account, call } = await peopleAccount(gateway, FILE);
            const teamIds = ((await call('GET', '/api/teams')).body.data as { id: number; name: string }[])
              .sort((a, b) => TEAMS.indexOf(a.name as never) - TEAMS.indexOf(b.name as never))
              .map((t) => t.id);
            const ids = account.agents.map((a) => a.id).sort((a, b) => a - b);
            const model: Model = new Model(
              FILE.agents.map((a, i) => ({
                id: ids[i] as number,
                active: true,
                status: 'available',
                capacity: null,
                teams: a.teams
                  .map((name) => teamIds[TEAMS.indexOf(name as never)] as number)
                  .sort((x, y) => x - y),
              })),
            );
            const ok = async (method: string, path: string, body?: unknown) => {
              const answer = await call(method, path, body);
              expect(answer.status, `${method} ${path} ${JSON.stringify(body)}: ${answer.text}`).toBeLessThan(
                300,
              );
              return answer.body;
            };
            // A ticket change aims mostly at an agent's open ticket, what frees them; else any of the live ones.
            const target = (n: number) => {
              const held = model.live().filter((t) => t.status === 'open' && t.assignee !== null);
              const pool = held.length > 0 && n % 4 !== 0 ? held : model.live();
              return pool[Math.floor(n / 4) % Math.max(1, pool.length)];
            };
            const done: string[] = [`start ${JSON.stringify(start)}`];
            // Small capacities and someone away at the start, so that tickets wait and agents free up.
            for (const [i, a] of model.agents.entries()) {
              const { capacity, status } = start[i] as (typeof start)[number];
              await ok('PATCH', `/api/agents/${a.id}`, { capacity, status });
              Object.assign(a, { capacity, status });
            }

            for (const step of steps) {
              await clock().advance(1_000);
              model.seen = undefined;
              await apply(step);
              done.push(JSON.stringify(step));
              await settle();
              await compare(done.join('\n'));
            }
            // Each change once: one ticket.updated per change the model counted, hand-overs and hand-backs included.
            const { events } = await readFeedToEnd(gateway.call, account.apiKey, {
              limit: 100,
              types: ['ticket.updated'],
            });
            const counted = new Map<string, number>();
            for (const e of events) {
              const uuid = String(e.data.object.uuid);
              counted.set(uuid, (counted.get(uuid) ?? 0) + 1);
            }
            const expected = model.tickets.filter((t) => t.updates > 0).map((t) => [t.uuid, t.updates]);
            expect([...counted].sort(), `ticket.updated per ticket after\n${done.join('\n')}`).toEqual(
              expected.sort(),
            );

            async function apply(step: Step) {
              switch (step.kind) {
                case 'create': {
                  const team = step.queue < 2 ? (teamIds[step.queue] as number) : null;
                  const body = {
                    subject: 'Help',
                    description: 'Please',
                    requester_email: 'c@client.test',
                    priority: step.priority,
                  };
                  const made = await ok('POST', '/api/tickets', {
                    ...body,
                    ...(step.queue < 2 ? { category_slug: (TEAMS[step.queue] as string).toLowerCase() } : {}),
                  });
                  const assignee = model.pick(team);
                  const ticket = made.ticket as { uuid: string; assignee: { id: number } | null };
                  expect(
                    ticket.assignee?.id ?? null,
                    `the create's least-busy pick after\n${done.join('\n')}`,
                  ).toBe(assignee);
                  model.tickets.push({
                    uuid: ticket.uuid,
                    seq: model.tickets.length,
                    priority: step.priority,
                    team,
                    status: 'open',
                    assignee,
                    deleted: false,
                    updates: 0,
                  });
                  return;
                }
                case 'resolve': {
                  const t = target(step.ticket);
                  if (!t) return;
                  await ok('PATCH', `/api/tickets/${t.uuid}`, { status: 'resolved' });
                  if (t.status === 'resolved') return;
                  t.status = 'resolved';
                  t.updates++;
                  if (t.assignee !== null) model.serve(t.assignee);
                  return;
                }
                case 'reassign': {
                  const t = target(step.ticket);
                  const to = model.agents[step.agent] as MAgent;
                  if (!t) return;
                  const answer = await call('PATCH', `/api/tickets/${t.uuid}`, { assignee_id: to.id });
                  // Only an active agent may be named (decisions.md, "One ticket"); a manual one may pass a capacity.
                  expect(answer.status, answer.text).toBe(to.active ? 200 : 422);
                  if (!to.active || t.assignee === to.id) return;
                  const from = t.status === 'open' ? t.assignee : null;
                  t.assignee = to.id;
                  t.updates++;
                  if (from !== null) model.serve(from);
                  return;
                }
                case 'delete': {
                  const t = target(step.ticket);
                  if (!t) return;
                  await ok('DELETE', `/api/tickets/${t.uuid}`);
                  t.deleted = true;
                  if (t.status === 'open' && t.assignee !== null) model.serve(t.assignee);
                  return;
                }
                case 'status': {
                  const a = model.agents[step.agent] as MAgent;
                  await ok('PATCH', `/api/agents/${a.id}`, { status: step.status });
                  a.status = step.status;
                  model.serve(a.id);
                  return;
                }
                case 'capacity': {
                  const a = model.agents[step.agent] as MAgent;
                  await ok('PATCH', `/api/agents/${a.id}`, { capacity: step.capacity });
                  a.capacity = step.capacity;
                  model.serve(a.id);
                  return;
                }
                case 'active': {
                  const a = model.agents[step.agent] as MAgent;
                  await ok('PATCH', `/api/agents/${a.id}`, { active: step.active });
                  await settle();
                  const was = a.active;
                  a.active = step.active;
                  if (was && !a.active) {
                    model.handBack(a.id, null);
                    model.wake(a.teams);
                  }
                  model.serve(a.id);
                  return;
                }
                case 'teams': {
                  const a = model.agents[step.agent] as MAgent;
                  const teams = step.teams.map((i) => teamIds[i] as number);
                  await ok('PATCH', `/api/agents/${a.id}`, { team_ids: teams });
                  await settle();
                  model.setTeams(a.id, teams);
                  return;
                }
                case 'member': {
                  const a = model.agents[step.agent] as MAgent;
                  const team = teamIds[step.team] as number;
                  const members = model.agents.filter((x) => x.teams.includes(team)).map((x) => x.id);
                  const next = members.includes(a.id)
                    ? members.filter((id) => id !== a.id)
                    : [...members, a.id];
                  await ok('PATCH', `/api/teams/${team}`, { agent_ids: next });
                  await settle();
                  model.setTeams(
                    a.id,
                    a.teams.includes(team) ? a.teams.filter((t) => t !== team) : [...a.teams, team],
                  );
                  return;
                }
              }
            }

            /** The runners to rest, and what the service then shows (once a step: apply calls it before a hand-back). */
            async function settle() {
              if (model.seen) return;
              await quiesce();
              const listed = (await ok('GET', '/api/tickets?per_page=100')).data as Listed[];
              model.seen = new Map(listed.map((t) => [t.uuid, t.assignee?.id ?? null]));
            }

            async function compare(history: string) {
              expect(model.idleBesideWaiting(), `the model's own promise after\n${history}`).toEqual([]);
              const listed = (await ok('GET', '/api/tickets?per_page=100')).data as Listed[];
              const shown = (t: { uuid: string; status: string; assignee: number | null }) =>
                `${t.uuid} ${t.status} ${t.assignee ?? '-'}`;
              expect(
                listed.map((t) => shown({ ...t, assignee: t.assignee?.id ?? null })).sort(),
                `tickets after\n${history}`,
              ).toEqual(model.live().map(shown).sort());
              const agents = (await ok('GET', '/api/agents?limit=100')).data as AgentShown[];
              expect(
                agents.map((a) => ({
                  id: a.id,
                  active: a.active,
                  status: a.status,
                  capacity: a.capacity,
                  teams: a.team_ids,
                  open: a.open_tickets,
                })),
                `agents after\n${history}`,
              ).toEqual(
                model.agents.map((a) => ({
                  id: a.id,
                  active: a.active,
                  status: a.status,
                  capacity: a.capacity,
                  teams: a.teams,
                  open: model.openWork(a.id),
                })),
              );
              for (const team of [...teamIds, null]) {
                const queue = (
                  await ok(
                    'GET',
                    `/api/tickets?assignee=unassigned&team_id=${team ?? 'none'}&sort=queue&per_page=100`,
                  )
                ).data as { uuid: string }[];
                const waiting = model
                  .live()
                  .filter((t) => model.waiting(t) && t.team === team)
                  .sort(Model.queueOrder)
                  .map((t) => t.uuid);
                // The waiting ones in queue order; resolved unassigned ones after them.
                expect(
                  queue.slice(0, waiting.length).map((t) => t.uuid),
                  `queue ${team ?? 'none'} after\n${history}`,
                ).toEqual(waiting);
                const rest = model
                  .live()
                  .filter((t) => t.assignee === null && t.team === team && !model.waiting(t));
                expect(
                  queue
                    .slice(waiting.length)
                    .map((t) => t.uuid)
                    .sort(),
                  `queue ${team ?? 'none'}'s resolved`,
                ).toEqual(rest.map((t) => t.uuid).sort());
              }
            }
          },
        ),
        // Runs and a failure's shrinking stop after 30 s a run (~5 s each at load 14), and a stop is a failure: the
        // runs asked for are made, never fewer in silence.
        {
          seed: SEED,
          numRuns: RUNS,
          interruptAfterTimeLimit: RUNS * 30_000,
          markInterruptAsFailure: true,
          examples: EXAMPLES,
        },
      );
    },
    Math.max(180_000, RUNS * 36_000),
  );
});
