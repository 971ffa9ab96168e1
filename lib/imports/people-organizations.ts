import { isDeepStrictEqual } from 'node:util';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import { claimSourceKey, touchSourceKey } from '#lib/data/imports/source-keys.ts';
import {
  getOrganization,
  OrganizationClaimsTaken,
  createOrganization as storeOrganization,
  updateOrganization as writeOrganization,
} from '#lib/data/organizations/organizations.ts';
import { commit } from '#lib/data/store/transact.ts';
import { domainName } from '#lib/email/addresses.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { presentOrganization } from '#lib/organizations/present.ts';
import { isSharedDomain } from '#lib/organizations/shared-domains.ts';
import { MAX_DOMAINS, MAX_NAME_LENGTH, type Organization } from '#lib/organizations/types.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { importEvent } from './imported-from.ts';
import { type Keyed, RecordRefused, writeEach } from './people-common.ts';
import type { ImportedOrganization } from './records.ts';
import type { ImportContext, PageWritten } from './writing.ts';

/**
 * Imported organizations (issue 42): found by their source key, else created; with their domains, each as the API
 * reads one (lower-case ASCII). A domain that is no domain, a free-mail or disposable one, one past MAX_DOMAINS or one
 * another organization of the account holds is dropped with an error row, and the organization kept.
 */
export async function writeOrganizations(
  ctx: ImportContext,
  organizations: readonly ImportedOrganization[],
  written: PageWritten,
): Promise<void> {
  const dropped = (sourceId: string, reason: string) =>
    written.errors.push({ type: 'organizations', sourceId, reason });

  const check = (org: ImportedOrganization) => checkOrganization(org, dropped);

  const write = async ({ record, ref, digest, found }: Keyed<ImportedOrganization>) => {
    const stored = found ? await getOrganization(ctx.accountId, found.objectId as number) : undefined;
    if (found && !stored) throw new RecordRefused('The organization it was imported as was deleted here.');
    const same = (domains: string[]) =>
      stored !== undefined &&
      isDeepStrictEqual({ ...stored.entity, name: record.name, domains }, stored.entity);
    if (ctx.validate) return !stored ? 'created' : same(record.domains) ? 'unchanged' : 'updated';
    const at = formatTimestamp(nowMicros());
    const id =
      stored?.entity.id ?? ((await reserveIds(ctx.accountId, { organization: 1 })).organization as number);
    let domains = record.domains;
    for (;;) {
      try {
        if (stored && found && same(domains)) {
          // Changed at the source, but not here (a domain dropped again): the key moves, the organization stays.
          await commit([touchSourceKey(ctx.accountId, ref, found.digest, digest)]);
          return 'unchanged';
        }
        if (stored && found) {
          const before = stored.entity;
          const next = { ...before, name: record.name, domains };
          const after = { ...next, updatedAt: at };
          const shown = (o: Organization) => presentOrganization(o);
          await writeOrganization(
            ctx.accountId,
            { before, after, version: stored.version },
            {
              event: importEvent(
                updatedEvent('organization', shown(before), shown(after), stored.version + 1),
                ctx.importId,
              ),
              actions: [touchSourceKey(ctx.accountId, ref, found.digest, digest, ctx.mark)],
            },
          );
          return 'updated';
        }
        const org: Organization = {
          id,
          name: record.name,
          domains,
          externalId: null,
          createdAt: at,
          updatedAt: at,
          importedFrom: { source: ctx.source, id: record.sourceId, importId: ctx.importId },
        };
        await storeOrganization(ctx.accountId, org, {
          event: importEvent(createdEvent('organization', presentOrganization(org)), ctx.importId),
          actions: [
            claimSourceKey(
              ctx.accountId,
              ref,
              { objectId: id, importId: ctx.importId, digest, matched: false },
              ctx.mark,
            ),
          ],
        });
        return 'created';
      } catch (error) {
        if (!(error instanceof OrganizationClaimsTaken)) throw error;
        if (error.nameTaken)
          throw new RecordRefused('The name has already been taken by another organization.');
        for (const domain of error.domains) {
          dropped(record.sourceId, `The domain ${domain} is another organization's: dropped.`);
        }
        const kept = domains.filter((d) => !error.domains.includes(d));
        if (kept.length === domains.length) throw error;
        domains = kept;
      }
    }
  };

  await writeEach(ctx, organizations, written, {
    type: 'organizations',
    sourceIdOf: (o) => o.sourceId,
    check,
    write,
  });
}

/** The record's name checked as the API checks it, and its domains read, each one it cannot keep `dropped`. */
function checkOrganization(
  org: ImportedOrganization,
  dropped: (sourceId: string, reason: string) => void,
): ImportedOrganization {
  const name = org.name.trim();
  if (name.length === 0) throw new RecordRefused('The name field is required.');
  if (name.length > MAX_NAME_LENGTH) {
    throw new RecordRefused(`The name field must not be greater than ${MAX_NAME_LENGTH} characters.`);
  }
  const domains: string[] = [];
  for (const raw of org.domains) {
    const domain = /[\s/\\?#@:]/.test(raw.trim()) ? undefined : domainName(raw.trim());
    if (domain === undefined) dropped(org.sourceId, `The domain ${raw} is not a domain name: dropped.`);
    else if (isSharedDomain(domain)) {
      dropped(org.sourceId, `The domain ${domain} is a free-mail or disposable e-mail domain: dropped.`);
    } else if (domains.length >= MAX_DOMAINS && !domains.includes(domain)) {
      dropped(org.sourceId, `The domain ${domain} is past the ${MAX_DOMAINS} an organization has: dropped.`);
    } else if (!domains.includes(domain)) domains.push(domain);
  }
  return { ...org, name, domains };
}
