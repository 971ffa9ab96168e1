/**
 * The shapes of docs/capacity.md's figures: a ticket as `npm run bench -- --capacity` creates it (bench/capacity.ts:
 * a 3 KB description, 5 custom fields, a 9-word subject, its own requester), and the update it makes (status,
 * priority and assignee at once). test/api/ticket-write-units.test.ts holds the write path to the same shapes.
 */
/**
 * A real support mail's length and make (3,069 characters of varied prose, a list, a signature and a quoted reply),
 * not one sentence repeated: what a ticket's item and event hold is stored compressed, and a repeated sentence would
 * compress ~50 times where mail compresses ~2 times (docs/capacity.md, "What each change writes").
 */
export const CAPACITY_DESCRIPTION = `Hello support team,

I am writing about our March invoice (account 48213, billing contact Priya Raman). It never arrived in the billing portal, and the reminder e-mail we received on the 14th links to a page that says "No documents found for this period". Our finance department closes the quarter next Friday, so we need either the PDF or a written confirmation of the amount before then.

What we have checked on our side:
1. The invoice recipients list still shows accounts-payable@northwind-logistics.example and my own address; both mailboxes received the February invoice without trouble.
2. Our spam filter logs show nothing from your billing domain since 2 March.
3. Two colleagues in Rotterdam and Lyon tried the portal from different browsers (Firefox 128 and Edge) and see the same empty list. Clearing cookies did not help.
4. The usage report for March shows 250 seats and the two add-ons we bought in January (priority routing and the reporting pack), so the subscription itself looks active.

Could you also check whether the seat count is right? We removed eleven contractors on 20 February, and I would expect the March invoice to be prorated for them. Last year a similar change was only reflected two months later, which caused a credit note and a lot of back and forth with our auditors.

If it helps, our purchase order for this renewal is PO-2027-0331, and the VAT number on file should be NL 8241.77.310.B01. Please make sure both appear on the document, otherwise our accounts payable system rejects it automatically and the payment is delayed by another cycle.

I have attached a screenshot of the portal page and the reminder e-mail with its headers. Happy to jump on a short call on Tuesday or Wednesday afternoon (CET) if that is easier for you.

Thanks a lot for your help,

Priya Raman
Finance Operations Lead, Northwind Logistics B.V.
Keizersgracht 214, 1016 DZ Amsterdam, The Netherlands
+31 20 555 0142 (direct line, morning)

-----Original message-----
From: Billing <billing@vendor.example>
Sent: Thursday, 14 March 2027 09:12
Subject: Reminder: your invoice for March is ready

Dear customer, your invoice for the period 1 to 31 March is ready in the billing portal. Payment is due within 30 days of the invoice date. If you have questions about this invoice, reply to this message or open a request from the portal's help page.

P.S. One more thing our controller asked me to raise: the February invoice listed the reporting pack twice, once as a line item and once inside the bundle price. We paid it in full to avoid a late fee, so if the duplicate is confirmed we would prefer a credit on the March invoice rather than a refund to the card, since the card on file expires at the end of April and will be replaced by a bank transfer mandate. Our new IBAN is with your onboarding team already (ticket from January, I do not have its number at hand). If a call is needed for the credit, please include someone from collections, since the late fee notice we got on the 3rd also mentioned a suspension date. Kind regards again, Priya.`;
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
