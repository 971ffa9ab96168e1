import type { Deal } from './types.ts';

/** A deal as the API shows it: no expected_close_date or contact_phone (they are stored, not shown). */
export function presentDeal(d: Deal) {
  return {
    uuid: d.uuid,
    name: d.name,
    amount: d.amount,
    currency: d.currency,
    status: d.status,
    probability: d.probability,
    pipeline: d.pipeline,
    stage: d.stage,
    contact: { uuid: d.contact.uuid, full_name: d.contact.fullName, email: d.contact.email },
    created_at: d.createdAt,
  };
}
