import { expect } from 'vitest';
import { createTestAccount } from './accounts.ts';
import { readFeedToEnd } from './feed.ts';
import type { Gateway } from './http.ts';

/** An account for the people routes' tests (test/api/agents.test.ts, teams.test.ts), and its calls. */
export async function peopleAccount(gateway: Gateway, file: Record<string, unknown> = {}) {
  const account = await createTestAccount(file);
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    gateway.call(method, path, {
      key: account.apiKey,
      ...(body !== undefined ? { body } : {}),
      ...(headers ? { headers } : {}),
    });
  const agent = async (body: Record<string, unknown>) => {
    const made = await call('POST', '/api/agents', body);
    expect(made.status, made.text).toBe(201);
    return made.body.data as AgentShown;
  };
  const team = async (body: Record<string, unknown>) => {
    const made = await call('POST', '/api/teams', body);
    expect(made.status, made.text).toBe(201);
    return made.body.data as TeamShown;
  };
  /** The account's events after `after` (none: all of them). */
  const events = async (after?: string) =>
    (await readFeedToEnd(gateway.call, account.apiKey, { limit: 100, after })).events;
  return { account, call, agent, team, events };
}

export interface AgentShown {
  id: number;
  email: string;
  name: string;
  active: boolean;
  team_ids: number[];
  status: string;
  status_until: string | null;
  capacity: number | null;
  open_tickets: number;
  created_at: string;
  updated_at: string;
  imported_from: unknown;
}

export interface TeamShown {
  id: number;
  name: string;
  agent_ids: number[];
  created_at: string;
  updated_at: string;
  imported_from: unknown;
}
