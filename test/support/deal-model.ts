import type { DealShown, PipelineShape } from './deal-checks.ts';

/**
 * A plain in-memory model of deals and their contacts, written from decisions.md ("Deals and contacts", "Deals that
 * move") and not from lib/deals: what each create, deal PATCH and contact PATCH must answer, and what every deal is
 * afterwards. Amounts are kept as the client sent them; sums are the checks' (exact decimals).
 */

export interface ModelContact {
  /** Known once the service answered with it. */
  uuid?: string;
  email: string;
  firstName: string;
  lastName: string;
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

  constructor(
    readonly pipelines: (PipelineShape & { default?: boolean })[],
    contacts: ModelContact[],
  ) {
    this.contacts = contacts.map((c) => ({ ...c }));
  }

  private stage(id: number) {
    for (const p of this.pipelines) {
      const s = p.stages.find((st) => st.id === id);
      if (s) return { pipelineId: p.id, probability: s.probability };
    }
    return undefined;
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

  create(uuid: string, body: DealCreate): Outcome {
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
    if (!contact) {
      if (!body.contact_first_name) return { status: 422, field: 'contact_first_name' };
      contact = {
        email: body.contact_email,
        firstName: body.contact_first_name,
        lastName: body.contact_last_name ?? '',
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
    };
    this.deals.push(deal);
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
      // with none unless one is given.
      next.lostReason = null;
    }
    if (body.lost_reason !== undefined) next.lostReason = body.lost_reason;
    const changed = (
      ['name', 'amount', 'currency', 'status', 'pipelineId', 'stageId', 'lostReason'] as const
    ).some((k) => next[k] !== deal[k]);
    if (changed) next.version = deal.version + 1;
    Object.assign(deal, next);
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
    if (body.first_name !== undefined) contact.firstName = body.first_name;
    if (body.last_name !== undefined) contact.lastName = body.last_name;
    if (body.email !== undefined) contact.email = body.email;
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
          full_name: `${d.contact.firstName} ${d.contact.lastName}`.trim(),
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
