import { isDeepStrictEqual } from 'node:util';
import * as v from 'valibot';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { getOrganizations } from '#lib/data/organizations/organizations.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { organizationOfId } from '#lib/organizations/refs.ts';
import { applyChange, resolveReferences } from '#lib/tickets/apply-change.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import { UpdateTicketSchema } from '#lib/tickets/schemas.ts';
import { nowMicros } from '#lib/time.ts';
import { wire } from '#lib/validation/wire-form.ts';
import { parseInput } from '#lib/validation.ts';
import { getActiveRules } from './cache.ts';
import { type ChangeContext, evaluateRules } from './evaluate.ts';
import { presentOutcomes, presentWritten } from './present.ts';
import { directoryOf, namedOrganizationIds, referencesOf } from './references.ts';
import { parseRule } from './schemas.ts';
import { dueTimeRules } from './time-rules.ts';
import type { Rule } from './types.ts';

/**
 * `POST /api/rules/test` (decisions.md, "Business rules"; docs/rules.md, "`rules/test`"): the ticket, a change
 * (a PATCH body) or a message, and the account's active rules (from the rules cache, as a real change reads them)
 * or drafts, run through the one evaluator. Writes nothing.
 */

export const MAX_DRAFT_RULES = 100;

/** A PATCH body, read by the PATCH's own schema once the ticket is found (its wire form: UpdateTicketRequest). */
const patchBody = v.optional(
  v.pipe(
    v.record(v.string(), v.unknown(), 'The change field must be an object.'),
    wire<Record<string, unknown>>(UpdateTicketSchema),
  ),
);

export const TestRulesSchema = v.object({
  ticket: v.pipe(
    v.string('The ticket field is required.'),
    v.maxLength(36, 'The ticket field must not be greater than 36 characters.'),
    v.regex(/^[0-9A-Za-z-]+$/, 'The ticket field must be a uuid or a reference.'),
    v.description("The ticket's uuid or reference."),
  ),
  change: patchBody,
  message: v.optional(
    v.object(
      {
        body: v.pipe(v.string('The message.body field must be a string.'), v.maxLength(65_536)),
        visibility: v.optional(v.picklist(['public', 'internal'], 'The selected visibility is invalid.')),
        author: v.optional(v.picklist(['agent', 'requester'], 'The selected author is invalid.')),
      },
      'The message field must be an object.',
    ),
  ),
  at: v.optional(
    v.pipe(
      v.string('The at field must be a date.'),
      v.maxLength(40, 'The at field must be a date.'),
      v.isoTimestamp('The at field must be a date (ISO 8601, with a time zone).'),
      v.description('A moment to run the time rules due then (and the `updated` rules after them).'),
    ),
  ),
  rules: v.optional(
    v.pipe(
      v.array(v.unknown(), 'The rules field must be an array.'),
      v.maxLength(MAX_DRAFT_RULES, `The rules field must not have more than ${MAX_DRAFT_RULES} items.`),
    ),
  ),
});

/** A part of the body read with its own rules: its 422 paths under the part's (`change.status`, `rules.0.on`). */
function within<T>(prefix: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof ValidationFailed)) throw error;
    const paths = Object.entries(error.errors).map(([path, m]) => [
      path === 'body' ? prefix : `${prefix}.${path}`,
      m,
    ]);
    throw new ValidationFailed(Object.fromEntries(paths));
  }
}

/** Drafts read as saved rules are (a 422 on `rules.N.…`), numbered 1, 2… in the order sent. */
function drafts(bodies: unknown[], refs: ReturnType<typeof referencesOf>): Rule[] {
  const at = '1970-01-01T00:00:00.000000Z';
  return bodies.map((body, i) => {
    const input = within(`rules.${i}`, () => parseRule(body, refs));
    return { ...input, id: i + 1, position: input.position ?? i, version: 0, createdAt: at, updatedAt: at };
  });
}

export async function testRules(accountId: string, body: unknown) {
  const input = parseInput(TestRulesSchema, body);
  if ([input.change, input.message, input.at].filter((x) => x !== undefined).length !== 1) {
    throw ValidationFailed.field('change', 'Send exactly one of change, message and at.');
  }
  // The ticket first: an unknown one is a 404 whatever else is wrong (decisions.md, "Errors").
  const [found, config] = await Promise.all([
    findTicket(accountId, input.ticket),
    getAccountConfig(accountId),
  ]);
  if (!found || !config) throw new NotFound();
  const change = input.change;
  const patch = change && within('change', () => parseInput(UpdateTicketSchema, change));
  const named =
    patch?.organization_id !== undefined
      ? await organizationOfId(accountId, patch.organization_id)
      : undefined;
  const before = found.entity;
  const orgIds = (input.rules ?? []).flatMap(namedOrganizationIds);
  const rules = input.rules
    ? drafts(input.rules, referencesOf(config, await getOrganizations(accountId, orgIds), 0))
    : await getActiveRules(accountId);
  const atUs = input.at === undefined ? undefined : Date.parse(input.at) * 1000;
  const nowUs = atUs ?? nowMicros();
  let after = before;
  if (patch) {
    const changes = resolveReferences(config, patch);
    if (named !== undefined) changes.organization = named;
    after = applyChange(before, patch, changes, config, nowUs);
  }
  const ruleOrgs = await getOrganizations(
    accountId,
    rules.flatMap((r) => namedOrganizationIds(r)),
  );
  // At `at`: the time rules due then (their cycles looked at already, as the ticket keeps them, fire no more), then the
  // `updated` rules, as a time change runs them.
  // A PATCH that changes nothing runs no rule (docs/rules.md, "In the change's transaction"): nor does its test.
  const unchanged = patch !== undefined && isDeepStrictEqual(after, before);
  const run =
    atUs === undefined
      ? unchanged
        ? []
        : rules
      : [
          ...dueTimeRules(before, rules, atUs, {
            calendar: config.account.businessHours,
            looked: before.ruleCycles ?? {},
          }),
          ...rules.filter((r) => r.on === 'updated'),
        ];
  const context: ChangeContext = {
    kind: patch ? 'update' : input.message ? 'message' : 'time',
    channel: 'api',
    automatic: false,
    imported: false,
    ...(input.message
      ? {
          message: {
            author: input.message.author ?? 'agent',
            visibility: input.message.visibility ?? 'public',
            body: input.message.body,
          },
        }
      : {}),
    ruleRepliesLastHour: 0,
    nowUs,
  };
  // `"auto"` runs the account's assignment at the real change, over the open work it reads then: here it is
  // shown as the ticket's assignee unchanged (docs/rules.md, "`rules/test`").
  const directory = directoryOf(config, ruleOrgs, (ticket) => ticket.assignee);
  const evaluation = evaluateRules({ before, after, context, rules: run, directory });
  return {
    ...presentOutcomes(evaluation),
    ticket: presentCreatedTicket(evaluation.ticket),
    ...presentWritten(evaluation.messages, before.requester.email),
    rules_stopped: evaluation.stopped,
    rules_skipped: evaluation.skipped,
  };
}
