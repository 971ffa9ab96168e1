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
    contact: recordedContact(d),
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
    : recordedContact(d);
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

/** The deal's own copy of its contact; once the contact was erased, its uuid only (decisions.md). */
function recordedContact(d: Deal) {
  return d.contact.erased
    ? { uuid: d.contact.uuid, full_name: null, email: null, erased: true as const }
    : { uuid: d.contact.uuid, full_name: d.contact.fullName, email: d.contact.email };
}
