import { describe, expect, it } from 'vitest';
import {
  type ConversationState,
  conversationAfter,
  conversationAtCreate,
  type MessageFacts,
} from '#lib/tickets/conversation.ts';

/** The conversation reducer alone (lib/tickets/conversation.ts): the clock fields every message writes. */
const t = (s: number) => `2026-11-27T10:00:${String(s).padStart(2, '0')}.000000Z`;
const agent = (s: number, visibility: MessageFacts['visibility'] = 'public'): MessageFacts => ({
  author: 'agent',
  visibility,
  createdAt: t(s),
});
const requester = (s: number): MessageFacts => ({
  author: 'requester',
  visibility: 'public',
  createdAt: t(s),
});
const replay = (messages: MessageFacts[]) =>
  messages.reduce<ConversationState>(conversationAfter, conversationAtCreate(t(0)));

describe('conversationAfter', () => {
  it('a new ticket: the requester waits from its creation, its description is the last message', () => {
    expect(conversationAtCreate(t(0))).toEqual({
      lastMessageAt: t(0),
      waitingSince: t(0),
      firstReplyAt: null,
      replyCycle: null,
    });
  });

  it('the first public agent message is the first reply and ends the wait; no cycle starts before it', () => {
    expect(replay([requester(1), agent(2)])).toEqual({
      lastMessageAt: t(2),
      waitingSince: null,
      firstReplyAt: t(2),
      replyCycle: null,
    });
  });

  it('an internal note moves only last_message_at', () => {
    const before = replay([agent(1), requester(2)]);
    expect(conversationAfter(before, agent(3, 'internal'))).toEqual({ ...before, lastMessageAt: t(3) });
    expect(replay([agent(1, 'internal')])).toEqual({ ...conversationAtCreate(t(0)), lastMessageAt: t(1) });
  });

  it("a requester's message after the first reply starts a cycle; the next public reply completes it", () => {
    const started = replay([agent(1), requester(2)]);
    expect(started).toMatchObject({ waitingSince: t(2), replyCycle: { startedAt: t(2), completedAt: null } });
    // Already waiting: neither waiting_since nor the cycle move.
    const still = conversationAfter(started, requester(3));
    expect(still).toEqual({ ...started, lastMessageAt: t(3) });
    const done = conversationAfter(still, agent(4));
    expect(done).toEqual({
      lastMessageAt: t(4),
      waitingSince: null,
      firstReplyAt: t(1),
      replyCycle: { startedAt: t(2), completedAt: t(4) },
    });
    // A second reply does not move the completed cycle, nor the first reply.
    expect(conversationAfter(done, agent(5))).toEqual({ ...done, lastMessageAt: t(5) });
    // The requester's next message starts a new cycle.
    expect(conversationAfter(done, requester(6)).replyCycle).toEqual({ startedAt: t(6), completedAt: null });
  });

  it('a system message moves only last_message_at', () => {
    const before = replay([agent(1), requester(2)]);
    expect(conversationAfter(before, { author: 'system', visibility: 'public', createdAt: t(3) })).toEqual({
      ...before,
      lastMessageAt: t(3),
    });
  });
});
