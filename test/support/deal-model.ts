import { isDeepStrictEqual } from 'node:util';
import type { DealShown, PipelineShape } from './deal-checks.ts';

/**
 * A plain in-memory model of deals and their contacts, written from decisions.md ("Deals and contacts", "Deals that
 * move", "Events") and not from lib/deals or lib/events: what each create, deal PATCH and contact PATCH must
 * answer, what every deal is afterwards, and the events each one writes. Amounts are kept as the client sent them;
 * sums are the checks' (exact decimals). The only values it takes from the service are the ones it cannot know:
 * identifiers a create gives and the timestamps a change sets (from the change's answer, or a GET right after).
 */

/** A timestamp a change sets: known to be set, its value (the service's clock) known once an answer shows it. */
export const SET_NOW = '<set by this change>';

export interface ModelContact {
  /** Known once the service answered with it. */
  uuid?: string;
  email: string;
  firstName: string;
  lastName: string;
  /** The ETag's version: 1 on creation, one more for every PATCH that changed something. */
  version: number;
  updatedAt: string;
}

/** A pipeline as the account's state shows it, its stages with the name and color a deal shows. */
export type ModelPipeline = Omit<PipelineShape, 'stages'> & {
  default?: boolean;
  stages: (PipelineShape['stages'][number] & { name: string; color: string })[];
};

/**
 * An event the model predicts: its type, the object it is about (its uuid read once the service gave it), the
 * version, the changed fields' values before (`*.updated`), and the object as its GET shows it after the change
 * (the fields the model knows; `seal` takes it once the change's timestamps are known).
 */
export interface ModelEvent {
  type: string;
  of: ModelDeal | ModelContact;
  version: number;
  previous?: Record<string, unknown>;
  object?: Record<string, unknown>;
}

export interface ModelDeal {
  uuid: string;
  name: string;
  amount: number;
  currency: string;
  status: 'open' | 'won' | 'lost';
  pipelineId: number;
  stageId: number;
  lostReason: string | null;
  /** The contact as it is now (a renamed or re-e-mailed contact is so in its deals' answers). */
  contact: ModelContact;
  /** The ETag's version: 1 on creation, one more for every PATCH that changed something. */
  version: number;
  createdAt: string;
  updatedAt: string;
  wonAt: string | null;
  lostAt: string | null;
}

export interface DealCreate {
  name: string;
  amount?: number;
  currency?: string;
  pipeline_id?: number;
  stage_id?: number;
  contact_email: string;
  contact_first_name?: string;
  contact_last_name?: string;
}

export interface DealPatch {
  name?: string;
  amount?: number;
  currency?: string;
  pipeline_id?: number;
  stage_id?: number;
  status?: 'open' | 'won' | 'lost';
  lost_reason?: string;
}

/** A 422 the model expects, naming its field; or the answer's status and the deal after it. */
export type Outcome = { status: 422; field: string } | { status: 200 | 201; deal: ModelDeal };

export class DealModel {
  /** Newest last. */
  readonly deals: ModelDeal[] = [];
  readonly contacts: ModelContact[];
  /**
   * The events of each change, in the order of the changes (the order of two events of one commit, a deal's and
   * its new contact's, is not specified). The account file's contacts are the first change.
   */
  readonly events: ModelEvent[][] = [];

  constructor(
    readonly pipelines: ModelPipeline[],
    contacts: ModelContact[],
  ) {
    this.contacts = contacts.map((c) => ({ ...c }));
    this.events.push(this.contacts.map((c) => ({ type: 'contact.created', of: c, version: 1 })));
  }

  private stage(id: number) {
    for (const p of this.pipelines) {
      const s = p.stages.find((st) => st.id === id);
      if (s) return { pipelineId: p.id, probability: s.probability, pipeline: p, stage: s };
    }
    return undefined;
  }

  /** The fields of a deal's GET answer that the model knows, as the answer shows them. */
  dealView(d: ModelDeal): Record<string, unknown> {
    const placed = this.stage(d.stageId);
    return {
      uuid: d.uuid,
      name: d.name,
      amount: d.amount,
      currency: d.currency,
      status: d.status,
      probability: this.probability(d),
      pipeline: { id: d.pipelineId, name: placed?.pipeline.name },
      stage: { id: d.stageId, name: placed?.stage.name, color: placed?.stage.color },
      contact: { uuid: d.contact.uuid, full_name: fullName(d.contact), email: d.contact.email },
      lost_reason: d.lostReason,
      won_at: d.wonAt,
      lost_at: d.lostAt,
      created_at: d.createdAt,
      updated_at: d.updatedAt,
    };
  }

  /** The fields of a contact's GET answer that the model knows, its open deals counted. */
  contactView(c: ModelContact): Record<string, unknown> {
    return {
      uuid: c.uuid,
      first_name: c.firstName,
      last_name: c.lastName,
      full_name: fullName(c),
      email: c.email,
      updated_at: c.updatedAt,
      open_deals_count: this.deals.filter((d) => d.contact === c && d.status === 'open').length,
    };
  }

  private viewOf(of: ModelDeal | ModelContact) {
    return 'stageId' in of ? this.dealView(of) : this.contactView(of);
  }

  /** `*.updated`, with the fields of the GET answer that changed and their values before; none if none did. */
  private updated(type: string, of: ModelDeal | ModelContact, was: Record<string, unknown>): ModelEvent[] {
    const now = this.viewOf(of);
    const previous: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(was)) {
      if (!isDeepStrictEqual(value, now[field])) previous[field] = value;
    }
    return Object.keys(previous).length > 0 ? [{ type, of, version: of.version, previous }] : [];
  }

  /**
   * Once the service has answered a change (and its timestamps are in the model, `settle`): the objects of its
   * events, as their GET shows them now.
   */
  seal(): void {
    for (const event of this.events.at(-1) ?? []) event.object ??= this.viewOf(event.of);
  }

  /**
   * The timestamps a change set, as an answer shows them, put in the model; and what the answer shows that the
   * model does not expect: a timestamp the change should have set and did not, or one it should have kept and
   * changed.
   */
  settle(of: ModelDeal | ModelContact, shown: Record<string, unknown>): string[] {
    const problems: string[] = [];
    const fields: [string, string][] =
      'stageId' in of
        ? [
            ['updatedAt', 'updated_at'],
            ['wonAt', 'won_at'],
            ['lostAt', 'lost_at'],
          ]
        : [['updatedAt', 'updated_at']];
    const model = of as unknown as Record<string, string | null>;
    for (const [field, name] of fields) {
      const value = shown[name];
      if (model[field] !== SET_NOW) {
        if (value !== model[field]) problems.push(`${name}: shown ${value}, model ${model[field]}`);
      } else if (typeof value !== 'string') problems.push(`${name}: shown ${value}, model a new timestamp`);
      else model[field] = value;
    }
    return problems;
  }

  /** The stage a body names (`stage_id`, with `pipeline_id` matching it), or the field of the 422. */
  private placement(body: {
    pipeline_id?: number;
    stage_id?: number;
  }): { field: string } | { pipelineId: number; stageId: number } | undefined {
    if (body.stage_id === undefined) return undefined;
    const found = this.stage(body.stage_id);
    if (!found) return { field: 'stage_id' };
    if (body.pipeline_id !== undefined && body.pipeline_id !== found.pipelineId) return { field: 'stage_id' };
    return { pipelineId: found.pipelineId, stageId: body.stage_id };
  }

  contactOf(email: string) {
    return this.contacts.find((c) => c.email.toLowerCase() === email.toLowerCase());
  }

  /** A create, answered with the deal's `uuid` and `created_at` (its new contact's uuid is read from the answer). */
  create(uuid: string, createdAt: string, body: DealCreate): Outcome {
    let placed: { pipelineId: number; stageId: number };
    const named = this.placement(body);
    if (named && 'field' in named) return { status: 422, field: named.field };
    if (named) placed = named;
    else {
      // Neither given: the default pipeline's first stage (lowest position).
      const pipeline = this.pipelines.find((p) => p.default) ?? this.pipelines[0];
      const first = [...(pipeline?.stages ?? [])].sort((a, b) => a.position - b.position)[0];
      if (!pipeline || !first) throw new Error('no default pipeline');
      placed = { pipelineId: pipeline.id, stageId: first.id };
    }
    let contact = this.contactOf(body.contact_email);
    const isNew = !contact;
    if (!contact) {
      if (!body.contact_first_name) return { status: 422, field: 'contact_first_name' };
      contact = {
        email: body.contact_email,
        firstName: body.contact_first_name,
        lastName: body.contact_last_name ?? '',
        version: 1,
        updatedAt: SET_NOW,
      };
      this.contacts.push(contact);
    }
    const deal: ModelDeal = {
      uuid,
      name: body.name,
      amount: body.amount ?? 0,
      currency: (body.currency ?? 'EUR').toUpperCase(),
      status: 'open',
      ...placed,
      lostReason: null,
      contact,
      version: 1,
      createdAt,
      updatedAt: SET_NOW,
      wonAt: null,
      lostAt: null,
    };
    this.deals.push(deal);
    // The deal's event, and its new contact's, in the same commit.
    this.events.push([
      { type: 'deal.created', of: deal, version: 1 },
      ...(isNew ? [{ type: 'contact.created', of: contact, version: 1 }] : []),
    ]);
    return { status: 201, deal: { ...deal } };
  }

  patch(uuid: string, body: DealPatch): Outcome {
    const deal = this.deals.find((d) => d.uuid === uuid);
    if (!deal) throw new Error(`no deal ${uuid}`);
    if (Object.keys(body).length === 0) return { status: 422, field: 'body' };
    const named = this.placement(body);
    if (named && 'field' in named) return { status: 422, field: named.field };
    // lost_reason: only with status lost, or on a lost deal.
    if (body.lost_reason !== undefined) {
      const lostAfter = body.status === 'lost' || (body.status === undefined && deal.status === 'lost');
      if (!lostAfter) return { status: 422, field: 'lost_reason' };
    }
    const next: ModelDeal = { ...deal };
    if (body.name !== undefined) next.name = body.name;
    if (body.amount !== undefined) next.amount = body.amount;
    if (body.currency !== undefined) next.currency = body.currency.toUpperCase();
    if (named) Object.assign(next, named);
    if (body.status !== undefined && body.status !== deal.status) {
      next.status = body.status;
      // Reopening clears the reason; so does winning (a reason belongs to a lost deal); entering lost starts
      // with none unless one is given. Entering won sets won_at, entering lost lost_at, and each clears the
      // other; reopening clears both.
      next.lostReason = null;
      next.wonAt = body.status === 'won' ? SET_NOW : null;
      next.lostAt = body.status === 'lost' ? SET_NOW : null;
    }
    if (body.lost_reason !== undefined) next.lostReason = body.lost_reason;
    const changed = (
      ['name', 'amount', 'currency', 'status', 'pipelineId', 'stageId', 'lostReason'] as const
    ).some((k) => next[k] !== deal[k]);
    if (changed) {
      next.version = deal.version + 1;
      next.updatedAt = SET_NOW;
    }
    const was = this.dealView(deal);
    Object.assign(deal, next);
    this.events.push(this.updated('deal.updated', deal, was));
    return { status: 200, deal: { ...deal } };
  }

  /** PATCH /api/contacts/{contact}: an e-mail another contact has (case-insensitively) is a 422 on `email`. */
  patchContact(
    contact: ModelContact,
    body: { first_name?: string; last_name?: string; email?: string },
  ): { status: 200 } | { status: 422; field: string } {
    if (Object.keys(body).length === 0) return { status: 422, field: 'body' };
    if (body.email !== undefined) {
      const holder = this.contactOf(body.email);
      if (holder && holder !== contact) return { status: 422, field: 'email' };
    }
    const was = this.contactView(contact);
    const next = { ...contact };
    if (body.first_name !== undefined) next.firstName = body.first_name;
    if (body.last_name !== undefined) next.lastName = body.last_name;
    if (body.email !== undefined) next.email = body.email;
    if (!isDeepStrictEqual(next, contact)) {
      next.version = contact.version + 1;
      next.updatedAt = SET_NOW;
    }
    // The same object: the deals hold it, and show the contact as it is now.
    Object.assign(contact, next);
    this.events.push(this.updated('contact.updated', contact, was));
    return { status: 200 };
  }

  /** The probability the deal must show: its stage's while open, 100 won, 0 lost. */
  probability(d: ModelDeal): number {
    if (d.status === 'won') return 100;
    if (d.status === 'lost') return 0;
    return this.stage(d.stageId)?.probability ?? -1;
  }

  /** The deals in the shape the list and board checks read. */
  shown(): DealShown[] {
    return this.deals.map((d) => {
      return {
        uuid: d.uuid,
        name: d.name,
        amount: d.amount,
        currency: d.currency,
        status: d.status,
        probability: this.probability(d),
        pipeline: { id: d.pipelineId, name: '' },
        stage: { id: d.stageId, name: '' },
        contact: {
          uuid: d.contact.uuid ?? '',
          full_name: fullName(d.contact),
          email: d.contact.email,
        },
        lost_reason: d.lostReason,
        won_at: null,
        lost_at: null,
        version: d.version,
      };
    });
  }

  /** Whether a one-word search finds the deal: a prefix of a word of its name, or of its contact's name. */
  matchesSearch(d: DealShown, term: string): boolean {
    const words = `${d.name} ${d.contact.full_name}`.toLowerCase().split(/\s+/);
    return words.some((w) => w.startsWith(term.toLowerCase()));
  }
}

/** A contact's full name as decisions.md has it: first and last name, one space between. */
const fullName = (c: ModelContact) => `${c.firstName} ${c.lastName}`.trim();
