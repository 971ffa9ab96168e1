import { fullName } from '#lib/accounts/contact-name.ts';
import type { Contact } from '#lib/accounts/types.ts';
import type { Deal } from './types.ts';

/** A deal as the create response shows it (the specification's fields exactly). */
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

/**
 * A deal as GET, PATCH and the list show it: the create's fields, the contact as it is now (`contact`: read with
 * the deal; the deal's own record when the contact could not be read), and the fields that move.
 */
export function presentDealDetail(d: Deal, contact: Contact | undefined) {
  const current = contact
    ? { uuid: contact.uuid, full_name: fullName(contact.firstName, contact.lastName), email: contact.email }
    : { uuid: d.contact.uuid, full_name: d.contact.fullName, email: d.contact.email };
  return {
    ...presentDeal(d),
    contact: current,
    expected_close_date: d.expectedCloseDate,
    lost_reason: d.lostReason,
    won_at: d.wonAt,
    lost_at: d.lostAt,
    updated_at: d.updatedAt,
  };
}
