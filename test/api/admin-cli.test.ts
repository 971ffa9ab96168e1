import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { admin } from '#test/support/admin.ts';

/**
 * The admin commands as an operator runs them, in this process (test/support/admin.ts): JSON on stdout, errors
 * on stderr, exit codes; test/system/admin-cli-process.test.ts runs the real process. "Nothing was written" is
 * checked on the whole table: the file's own (test/support/file-table.ts).
 */
const tableName = process.env.TABLE_NAME ?? '';
const endpoint = process.env.DYNAMODB_ENDPOINT ?? '';
const client = new DynamoDBClient({
  endpoint,
  region: 'local',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

async function scanAll(): Promise<string[]> {
  const items: string[] = [];
  let start: Record<string, never> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) items.push(JSON.stringify(item, Object.keys(item).sort()));
    start = page.LastEvaluatedKey as Record<string, never> | undefined;
  } while (start);
  return items.sort();
}

async function accountFile(content: unknown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'deskpipe-'));
  const path = join(dir, 'account.json');
  await writeFile(path, JSON.stringify(content));
  return path;
}

const acme = {
  slug: 'acme',
  name: 'Acme Ltd',
  plan: 'pro',
  ticket_prefix: 'ACME',
  auto_assignment: { enabled: true, method: 'round_robin' },
  teams: [{ name: 'Billing' }],
  agents: [{ email: 'ann@acme.test', name: 'Ann', teams: ['Billing'], active: true }],
  categories: [{ slug: 'billing', name: 'Billing', default_team: 'Billing' }],
  business_hours: {
    time_zone: 'Europe/Paris',
    weekly: { mon: [['09:00', '17:00']] },
    holidays: ['2026-12-25'],
  },
  sla_policies: [
    {
      name: 'Urgent billing',
      priority: 'urgent',
      category: 'billing',
      resolution_minutes: 240,
      business_hours: true,
    },
  ],
  pipelines: [
    { name: 'Sales', default: true, stages: [{ name: 'Lead', color: '#3B82F6', probability: 10 }] },
  ],
  contacts: [{ email: 'kim@client.test', first_name: 'Kim', last_name: 'Known', phone: null }],
};

describe('admin CLI', () => {
  it('applies a file, then applies it again with the same ids, no key, and no write', async () => {
    const path = await accountFile(acme);
    const first = await admin('apply', path);
    expect(first.code).toBe(0);
    const state = JSON.parse(first.stdout);
    expect(state.api_key).toMatch(/^dpk_/);
    expect(state.agents).toEqual([
      { id: 1, email: 'ann@acme.test', name: 'Ann', active: true, team_ids: [1] },
    ]);
    expect(state.categories.find((c: { slug: string }) => c.slug === 'billing')).toMatchObject({
      default_team_id: 1,
    });
    expect(state.categories).toHaveLength(11);
    expect(state.contacts[0]).toMatchObject({ id: 1, email: 'kim@client.test', first_name: 'Kim' });

    const before = await scanAll();
    const second = await admin('apply', path);
    expect(second.code).toBe(0);
    const again = JSON.parse(second.stdout);
    expect(again.api_key).toBeUndefined();
    const { api_key: _key, ...withoutKey } = state;
    expect(again).toEqual(withoutKey);
    expect(await scanAll()).toEqual(before);
  });

  it('refuses a file with a bad field: exits non-zero, names the field and rule, and writes nothing', async () => {
    const before = await scanAll();
    const bad = {
      ...acme,
      agents: [{ email: 'not-an-email', name: 'Bob' }],
      teams: [{ name: 'Billing' }, { name: 'New' }],
    };
    const result = await admin('apply', await accountFile(bad));
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('agents[0].email: must be a valid e-mail address');
    expect(await scanAll()).toEqual(before);

    const unknownTeam = await admin(
      'apply',
      await accountFile({
        slug: 'newco',
        name: 'New',
        plan: 'pro',
        categories: [{ slug: 'x', name: 'X', default_team: 'Ghost' }],
      }),
    );
    expect(unknownTeam.code).not.toBe(0);
    expect(unknownTeam.stderr).toContain('categories[0].default_team: names no team');
    expect(await scanAll()).toEqual(before);
  });

  it('creates, lists and revokes keys, never printing a secret in the list', async () => {
    const created = await admin('keys', 'create', 'acme');
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout);
    // operations.md, "Keys and erasures": no --scopes is every scope.
    expect(key).toEqual({
      id: expect.stringMatching(/^key_/),
      api_key: expect.stringMatching(/^dpk_[0-9A-Za-z]{46}$/),
      name: 'admin',
      scopes: ['*'],
      created_at: expect.any(String),
      expires_at: null,
    });

    const listed = await admin('keys', 'list', 'acme');
    expect(listed.stdout).not.toContain(key.api_key);
    const { keys } = JSON.parse(listed.stdout);
    expect(keys.find((k: { id: string }) => k.id === key.id)).toEqual({
      id: key.id,
      name: 'admin',
      prefix: key.api_key.slice(0, 12),
      scopes: ['*'],
      created_at: key.created_at,
      expires_at: null,
      last_used_at: null,
      revoked_at: null,
    });

    const revoked = await admin('keys', 'revoke', key.id);
    expect(JSON.parse(revoked.stdout)).toEqual({ id: key.id, revoked_at: expect.any(String) });
    const missing = await admin('keys', 'revoke', 'key_doesnotexist');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('key_doesnotexist');
  });

  it('creates a key with --name, --scopes and --expires-in, and refuses an unknown scope writing nothing', async () => {
    const created = await admin(
      'keys',
      'create',
      'acme',
      '--name',
      'Dashboard',
      '--scopes',
      'tickets:read,deals:read',
      '--expires-in',
      '90d',
    );
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout);
    expect(key).toMatchObject({ name: 'Dashboard', scopes: ['tickets:read', 'deals:read'] });
    const days = (Date.parse(key.expires_at) - Date.parse(key.created_at)) / 86_400_000;
    expect(days).toBeCloseTo(90, 3);

    const before = await scanAll();
    const unknown = await admin('keys', 'create', 'acme', '--scopes', 'tickets:read,tickets:delete');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('tickets:delete');
    const badExpiry = await admin('keys', 'create', 'acme', '--expires-in', 'soon');
    expect(badExpiry.code).not.toBe(0);
    expect(badExpiry.stderr).toContain('--expires-in');
    expect(await scanAll()).toEqual(before);
  });

  it('prints usage and exits 2 for an unknown command', async () => {
    const result = await admin('frobnicate');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('usage:');
  });
});
