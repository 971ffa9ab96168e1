import * as v from 'valibot';
import type { FieldErrors } from '#lib/errors.ts';
import { isCalendarDate } from '#lib/time.ts';
import { emailAddress, validate } from '#lib/validation.ts';
import { ASSIGNMENT_METHODS, PLANS, PRIORITIES, WEEKDAYS } from './types.ts';

/**
 * The declarative account file of the admin CLI (docs/operations in shared/spec/operations.md).
 * Unknown fields are rejected here, unlike in API bodies: a typo in an operator's file must not pass silently.
 */

const text = (max: number) =>
  v.pipe(
    v.string('must be a string'),
    v.trim(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(max, `must be at most ${max} characters`),
  );
const email = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.maxLength(254, 'must be at most 254 characters'),
  emailAddress('must be a valid e-mail address', 'must be at most 254 characters'),
);
const bool = v.boolean('must be true or false');

/** A service-level target in minutes: 1 minute to one year. */
const minutes = v.pipe(
  v.number('must be a number'),
  v.integer('must be a whole number of minutes'),
  v.minValue(1, 'must be at least 1'),
  v.maxValue(525_600, 'must be at most 525600 (one year)'),
);
const time = v.pipe(
  v.string('must be a time HH:MM'),
  v.regex(/^(([01]\d|2[0-3]):[0-5]\d|24:00)$/, 'must be a time HH:MM'),
);
const interval = v.pipe(
  v.tuple([time, time], 'must be a pair ["HH:MM", "HH:MM"]'),
  v.check(([open, close]) => open < close, 'must open before it closes'),
);
const calendarDate = v.pipe(
  v.string('must be a date YYYY-MM-DD'),
  v.check(isCalendarDate, 'must be a real calendar date YYYY-MM-DD'),
);

export function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

const weekly = v.strictObject(
  Object.fromEntries(
    WEEKDAYS.map((day) => [day, v.optional(v.array(interval, 'must be a list of intervals'))]),
  ),
  'must be an object with keys mon..sun',
);

const slugPattern = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const AccountFileSchema = v.strictObject(
  {
    slug: v.pipe(
      v.string('must be a string'),
      v.regex(slugPattern, 'must be lower-case letters, digits, - or _ (1 to 63)'),
    ),
    name: text(255),
    plan: v.picklist(PLANS, `must be one of ${PLANS.join(', ')}`),
    suspended: v.optional(bool),
    rate_limit_per_minute: v.optional(
      v.nullable(
        v.pipe(
          v.number('must be a positive integer or null'),
          v.integer('must be a positive integer or null'),
          v.minValue(1, 'must be a positive integer or null'),
          v.maxValue(1_000_000, 'must be at most 1000000'),
        ),
      ),
    ),
    ticket_prefix: v.optional(
      v.pipe(v.string('must be a string'), v.regex(/^[A-Z]{2,10}$/, 'must be 2 to 10 capital letters')),
    ),
    default_priority: v.optional(v.picklist(PRIORITIES, `must be one of ${PRIORITIES.join(', ')}`)),
    auto_assignment: v.optional(
      v.strictObject({
        enabled: v.optional(bool),
        method: v.optional(v.picklist(ASSIGNMENT_METHODS, `must be one of ${ASSIGNMENT_METHODS.join(', ')}`)),
      }),
    ),
    teams: v.optional(v.array(v.strictObject({ name: text(255) }), 'must be a list')),
    agents: v.optional(
      v.array(
        v.strictObject({
          email,
          name: text(255),
          teams: v.optional(v.array(text(255), 'must be a list of team names')),
          active: v.optional(bool),
        }),
        'must be a list',
      ),
    ),
    categories: v.optional(
      v.array(
        v.strictObject({
          slug: v.pipe(
            v.string('must be a string'),
            v.regex(slugPattern, 'must be lower-case letters, digits, - or _'),
          ),
          name: text(255),
          default_team: v.optional(v.nullable(text(255))),
        }),
        'must be a list',
      ),
    ),
    email: v.optional(
      v.strictObject({
        addresses: v.pipe(
          v.array(v.pipe(email, v.toLowerCase()), 'must be a list of e-mail addresses'),
          v.maxLength(20, 'must have at most 20 addresses'),
          v.check((list) => new Set(list).size === list.length, 'must not repeat an address'),
        ),
        acknowledge: v.optional(bool),
      }),
    ),
    business_hours: v.optional(
      v.nullable(
        v.strictObject({
          time_zone: v.pipe(v.string('must be a string'), v.check(isTimeZone, 'must be an IANA time zone')),
          weekly,
          holidays: v.optional(v.array(calendarDate, 'must be a list of dates')),
        }),
      ),
    ),
    sla_policies: v.optional(
      v.array(
        v.strictObject({
          name: text(255),
          priority: v.optional(v.nullable(v.picklist(PRIORITIES, `must be one of ${PRIORITIES.join(', ')}`))),
          category: v.optional(v.nullable(v.string('must be a category slug'))),
          // One to three targets (decisions.md, "Reply-based service levels"); the check below wants one at least.
          first_reply_minutes: v.optional(minutes),
          next_reply_minutes: v.optional(minutes),
          resolution_minutes: v.optional(minutes),
          business_hours: v.optional(bool),
        }),
        'must be a list',
      ),
    ),
    pipelines: v.optional(
      v.array(
        v.strictObject({
          name: text(255),
          default: v.optional(bool),
          active: v.optional(bool),
          stages: v.pipe(
            v.array(
              v.strictObject({
                name: text(255),
                color: v.pipe(
                  v.string('must be a string'),
                  v.regex(/^#[0-9A-Fa-f]{6}$/, 'must be a hex colour #RRGGBB'),
                ),
                probability: v.pipe(
                  v.number('must be a number'),
                  v.integer('must be a whole number'),
                  v.minValue(0, 'must be between 0 and 100'),
                  v.maxValue(100, 'must be between 0 and 100'),
                ),
              }),
              'must be a list',
            ),
            v.minLength(1, 'must have at least one stage'),
          ),
        }),
        'must be a list',
      ),
    ),
    contacts: v.optional(
      v.array(
        v.strictObject({
          email,
          first_name: text(255),
          last_name: v.optional(v.nullable(text(255))),
          phone: v.optional(v.nullable(text(64))),
        }),
        'must be a list',
      ),
    ),
  },
  'must be a JSON object',
);

export type AccountFile = v.InferOutput<typeof AccountFileSchema>;

/** One problem in an account file: where (`agents[0].email`) and which rule. */
export interface FileProblem {
  path: string;
  rule: string;
}

/** An account file that breaks a rule: the CLI prints one `<path>: <rule>` line per problem. */
export class AccountFileInvalid extends Error {
  constructor(readonly problems: FileProblem[]) {
    super(problems.map((p) => `${p.path}: ${p.rule}`).join('\n'));
  }
}

function ruleOf(issue: v.BaseIssue<unknown>): string {
  // strictObject reports an unexpected key with a generic "Invalid key" message.
  if (issue.kind === 'schema' && issue.type === 'strict_object' && issue.expected === 'never') {
    return 'is not a known field';
  }
  return issue.message;
}

/** Validates a parsed account file; throws AccountFileInvalid naming every problem's field path and rule. */
export function parseAccountFile(raw: unknown): AccountFile {
  return validate(AccountFileSchema, raw, {
    paths: 'index',
    message: ruleOf,
    fail: (errors: FieldErrors) =>
      new AccountFileInvalid(
        Object.entries(errors).flatMap(([path, rules]) => rules.map((rule) => ({ path, rule }))),
      ),
  });
}
