import { describe, expect, it } from 'vitest';
import { searchMatches } from '#test/support/ticket-model.ts';

/** The test model's search (test/support/ticket-model.ts) against the examples of decisions.md, "Ticket list". */
describe("the ticket model's search", () => {
  const ticket = { subject: 'Invoice, E-mail bounces', reference: 'TKT-000042', email: 'Ann@Example.com' };
  const finds = (search: string, t = ticket) => searchMatches(t, search);

  it('matches word prefixes of the subject, without edge punctuation, and the inner parts of a word', () => {
    expect(finds('inv')).toBe(true);
    expect(finds('invoice')).toBe(true);
    expect(finds('mail')).toBe(true);
    expect(finds('e-mail')).toBe(true);
    expect(finds('voice')).toBe(false);
    expect(finds('invoice,')).toBe(false);
  });

  it('matches a prefix of the reference, and the number without its padding only', () => {
    expect(finds('tkt-00')).toBe(true);
    expect(finds('42')).toBe(true);
    expect(finds('4')).toBe(false);
    expect(finds('42', { ...ticket, reference: 'TKT-000420' })).toBe(false);
    expect(finds('1234', { ...ticket, reference: 'TKT-001234' })).toBe(true);
  });

  it('matches a prefix of the e-mail, whole or from its domain, in any case; every word must match', () => {
    expect(finds('ANN@EX')).toBe(true);
    expect(finds('example.com')).toBe(true);
    expect(finds('ample')).toBe(false);
    expect(finds('inv example')).toBe(true);
    expect(finds('inv nothing')).toBe(false);
    expect(finds('   ')).toBe(true);
  });
});
