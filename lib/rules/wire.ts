import * as v from 'valibot';
import { exactInteger } from '#lib/number-fields.ts';
import { MAX_MESSAGE_BODY } from '#lib/tickets/messages/message.ts';
import { MAX_ACTION_TAGS } from './action-checks.ts';
import { MAX_LISTED_VALUES } from './condition-checks.ts';
import { CONDITION_OPS, RULE_LIMITS, TIME_SINCE } from './types.ts';
import { MAX_CONDITION_TEXT, MAX_TAG_LENGTH } from './value-checks.ts';

/**
 * What a client sends for a rule's conditions, actions and time, for the OpenAPI document (lib/validation/
 * wire-form.ts): the shapes the checks take, the catalogue's rules (which field takes which op and value) in words.
 */

const scalar = v.nullable(
  v.union([v.pipe(v.string(), v.maxLength(MAX_CONDITION_TEXT)), v.number(), v.boolean()]),
);

/** A field's name: one of the catalogue's, or `custom_fields.` and a custom field's key. */
const fieldName = v.pipe(
  v.string(),
  v.maxLength(78),
  v.regex(/^[a-z][a-z_.]*$|^custom_fields\.[A-Za-z0-9_]{1,64}$/),
);

const conditionWire = v.pipe(
  v.object({
    field: v.pipe(
      fieldName,
      v.description(
        'status, priority, channel, via, category (slug), team_id, assignee_id, organization_id, tags, subject, ' +
          'description, requester_email, custom_fields.<key>; on message rules also message.author, ' +
          'message.visibility, message.body',
      ),
    ),
    op: v.picklist(CONDITION_OPS),
    value: v.optional(
      v.union([scalar, v.pipe(v.array(scalar), v.minLength(1), v.maxLength(MAX_LISTED_VALUES))]),
    ),
  }),
);

export const conditionsWire = v.nullable(
  v.pipe(
    v.object({
      all: v.optional(v.pipe(v.array(conditionWire), v.maxLength(RULE_LIMITS.conditions))),
      any: v.optional(v.pipe(v.array(conditionWire), v.maxLength(RULE_LIMITS.conditions))),
    }),
    v.description(`At most ${RULE_LIMITS.conditions} conditions, all and any together.`),
  ),
);

const tagWire = v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_TAG_LENGTH));
const id = v.pipe(exactInteger, v.minValue(1));

const actionWire = v.variant('type', [
  v.object({
    type: v.literal('set'),
    field: v.pipe(
      fieldName,
      v.description(
        'status, priority, team_id, assignee_id, category (slug), organization_id, custom_fields.<key>',
      ),
    ),
    value: v.pipe(scalar, v.description('assignee_id takes "auto": the account\'s assignment')),
  }),
  v.object({
    type: v.picklist(['add_tags', 'remove_tags']),
    tags: v.pipe(v.array(tagWire), v.minLength(1), v.maxLength(MAX_ACTION_TAGS)),
  }),
  v.object({
    type: v.picklist(['note', 'reply']),
    body: v.pipe(
      v.string(),
      v.maxLength(MAX_MESSAGE_BODY),
      v.description(
        'Placeholders: {{ticket.reference}}, {{ticket.subject}}, {{ticket.status}}, {{requester.name}}, {{agent.name}}',
      ),
    ),
    agent_id: v.optional(v.nullable(id)),
  }),
]);

export const actionsWire = v.pipe(v.array(actionWire), v.minLength(1), v.maxLength(RULE_LIMITS.actions));

export const timeWire = v.nullable(
  v.object({
    after_minutes: v.pipe(exactInteger, v.minValue(1), v.maxValue(RULE_LIMITS.afterMinutes)),
    since: v.picklist(TIME_SINCE),
    business_hours: v.optional(v.boolean()),
  }),
);
