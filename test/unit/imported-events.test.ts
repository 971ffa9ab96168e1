import { describe, expect, it } from 'vitest';
import { eventItems, eventText } from '#lib/data/events/item.ts';
import { bodyOf } from '#lib/data/events.ts';
import { matchesEventType } from '#lib/events/types.ts';
import { insertedEvent } from '#lib/webhooks/fan-out.ts';

const ACCOUNT = '7d1b2a0e-1111-4222-8333-444455556666';
const draft = { type: 'ticket.created', object: { uuid: 'u1', subject: 'Printer' }, version: 1 };

/** An event item as the stream hands it to the fan-out: an INSERT of the head eventItems gives. */
function inserted(extra: { importId?: string } = {}) {
  const { items } = eventItems(ACCOUNT, 10_000_000_000_017, { ...draft, ...extra }, 1_796_000_000_000_000);
  return {
    head: items[0] as Record<string, unknown>,
    record: { eventName: 'INSERT', sequenceNumber: '1', newImage: items[0] },
  };
}

describe("an import's events (spec/decisions.md, Imports: webhooks receive none of them)", () => {
  it('carry import_id at the top level of the event and on its item', () => {
    const { head } = inserted({ importId: 'imp_01' });
    const record = JSON.parse(eventText(head, [bodyOf(head)]).toString('utf8'));
    expect(record.import_id).toBe('imp_01');
    expect(record.data).not.toHaveProperty('import_id');
    expect(head.import_id).toBe('imp_01');
    // Every other event has none.
    const plain = inserted().head;
    expect(JSON.parse(eventText(plain, [bodyOf(plain)]).toString('utf8'))).not.toHaveProperty('import_id');
    expect(plain).not.toHaveProperty('import_id');
  });

  it('are not fanned out to webhooks; every other event is', () => {
    expect(insertedEvent(inserted({ importId: 'imp_01' }).record)).toBeUndefined();
    expect(insertedEvent(inserted().record)?.event).toMatchObject({ type: 'ticket.created' });
  });

  it('the job’s end is an event type of its own, which endpoints can subscribe to', () => {
    expect(matchesEventType(['import.*'], 'import.completed')).toBe(true);
    expect(matchesEventType(['import.completed'], 'import.failed')).toBe(false);
  });
});
