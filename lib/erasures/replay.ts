import {
  getErasureRecord,
  indexedAddresses,
  ledgerEntries,
  putLedgerEntry,
  referencedAddresses,
  restartErasure,
} from '#lib/data/erasures.ts';
import { sameHash } from '#lib/keyed-hash.ts';
import { formatTimestamp, nowMicros, nowMillis } from '#lib/time.ts';
import { addressHash } from './address-hash.ts';
import { firstProgress, runErasure, type StepOptions } from './job.ts';

/**
 * `erasures replay` (operations.md, "Keys and erasures"; docs/deploy.md, "After any restore: replay the
 * erasures"): every erasure of the ledger done again on the table as it now is. The ledger holds hashes only, and
 * the index names an address's dimension by the same hash: the person is found by the entities listed there (their
 * tickets, their contact: partitions of the account, never a Scan), else by the addresses of the mail their
 * references lead to (the references' partition is named by the same hash), each address found hashed again to be
 * sure; each match runs its erasure again, under its own id, to completion. A restored table may hold a ledger
 * older than the erasures done since the backup: `ledgerTable` names the table that was live (the ledger is copied
 * from it). Idempotent: an erasure run again on erased data changes nothing.
 */
export async function replayErasures(
  options: StepOptions & { ledgerTable?: string | undefined } = {},
): Promise<{ erasures: number; items_changed: number }> {
  const entries = await ledgerEntries(options.ledgerTable);
  const byAccount = new Map<string, typeof entries>();
  for (const entry of entries)
    byAccount.set(entry.accountId, [...(byAccount.get(entry.accountId) ?? []), entry]);
  let erasures = 0;
  let changed = 0;
  for (const [accountId, accountEntries] of byAccount) {
    for (const entry of accountEntries) await putLedgerEntry(entry);
    const matched = new Map<string, string>();
    // The person's tickets and contact, listed under the address's dimension, which the ledger's hash names; a
    // person no index names (only their mail on others' tickets): found by their references, whose partition
    // the same hash names, and the addresses of the mail they lead to.
    for (const entry of accountEntries) {
      for (const candidates of [indexedAddresses, referencedAddresses]) {
        for await (const address of candidates(accountId, entry.hash)) {
          if (!sameHash(addressHash(accountId, address), entry.hash)) continue;
          matched.set(entry.id, address.trim().toLowerCase());
          break;
        }
        if (matched.has(entry.id)) break;
      }
    }
    for (const entry of accountEntries) {
      const address = matched.get(entry.id);
      if (address === undefined) continue;
      const kept = await getErasureRecord(accountId, entry.id);
      await restartErasure(
        accountId,
        {
          id: entry.id,
          status: 'running',
          requestedAt: kept?.requestedAt ?? formatTimestamp(nowMicros()),
          completedAt: null,
          counts: {},
          hash: entry.hash,
        },
        firstProgress(address),
        nowMillis(),
      );
      await runErasure(accountId, entry.id, options);
      const done = await getErasureRecord(accountId, entry.id);
      changed += Object.values(done?.counts ?? {}).reduce((a, b) => a + b, 0);
      erasures++;
    }
  }
  return { erasures, items_changed: changed };
}
