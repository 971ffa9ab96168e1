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

/**
 * The reducer against a model written apart from it: each field read off the whole conversation at once
 * (decisions.md's words), where the reducer folds message by message.
 */
describe('conversationAfter, against a model of the whole conversation', () => {
  type Kind = 'agent' | 'note' | 'requester';
  const model = (created: string, kinds: Kind[]) => {
    const msgs = kinds.map((kind, i) => ({ kind, at: t(i + 1) }));
    const isReply = (m: { kind: Kind }) => m.kind === 'agent';
    const firstReply = msgs.find(isReply);
    let lastReplyIndex = -1;
    msgs.forEach((m, i) => {
      if (isReply(m)) lastReplyIndex = i;
    });
    const waiting =
      lastReplyIndex < 0
        ? created
        : (msgs.slice(lastReplyIndex + 1).find((m) => m.kind === 'requester')?.at ?? null);
    // A cycle starts at a requester message after the first reply that is the first since the reply before it.
    const starts = msgs.filter((m, i) => {
      if (m.kind !== 'requester' || firstReply === undefined || i < msgs.indexOf(firstReply)) return false;
      const replyBefore = msgs.slice(0, i).map(isReply).lastIndexOf(true);
      return !msgs.slice(replyBefore + 1, i).some((p) => p.kind === 'requester');
    });
    const lastStart = starts.at(-1);
    const completion = lastStart && msgs.slice(msgs.indexOf(lastStart) + 1).find(isReply);
    return {
      lastMessageAt: msgs.at(-1)?.at ?? created,
      waitingSince: waiting,
      firstReplyAt: firstReply?.at ?? null,
      replyCycle: lastStart ? { startedAt: lastStart.at, completedAt: completion?.at ?? null } : null,
    };
  };

  it('agrees on every conversation of up to 8 messages', () => {
    const kinds: Kind[] = ['agent', 'note', 'requester'];
    let checked = 0;
    for (let length = 0; length <= 8; length++) {
      for (let code = 0; code < 3 ** length; code++) {
        const sequence = Array.from({ length }, (_, i) => kinds[Math.floor(code / 3 ** i) % 3] as Kind);
        const folded = replay(
          sequence.map((kind, i) =>
            kind === 'note' ? agent(i + 1, 'internal') : kind === 'agent' ? agent(i + 1) : requester(i + 1),
          ),
        );
        expect(folded, sequence.join(',')).toEqual(model(t(0), sequence));
        checked++;
      }
    }
    expect(checked).toBe((3 ** 9 - 1) / 2);
  });
});
