/**
 * The shapes of docs/capacity.md's figures: a ticket as `npm run bench -- --capacity` creates it (bench/capacity.ts:
 * a 3 KB description, 5 custom fields, a 9-word subject, its own requester), and the update it makes (status,
 * priority and assignee at once). test/api/ticket-write-units.test.ts holds the write path to the same shapes.
 */
export const CAPACITY_DESCRIPTION = 'The March invoice never arrived. '.repeat(93); // 3,069 characters
export const CAPACITY_CUSTOM_FIELDS = {
  plan: 'gold',
  region: 'emea',
  tier: 'enterprise',
  seats: 250,
  renewal: '2027-03',
};

/** The n-th ticket's create body (its category must exist in the account: `invoices`). */
export const capacityTicketBody = (n: number) => ({
  subject: `Invoice ${n} missing for March from the billing portal`,
  description: CAPACITY_DESCRIPTION,
  requester_email: `customer${n}@client.test`,
  priority: 'high',
  category_slug: 'invoices',
  custom_fields: CAPACITY_CUSTOM_FIELDS,
});

/** The update of a ticket the bench measures, to `assigneeId`. */
export const capacityUpdate = (assigneeId: number | undefined) => ({
  status: 'pending',
  priority: 'urgent',
  assignee_id: assigneeId,
});
