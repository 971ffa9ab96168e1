import { domainName } from '#lib/email/addresses.ts';
import { packageFileText } from '#lib/package-file.ts';
import { SHARED_DOMAINS_FILE } from './shared-domains-file.ts';

/**
 * Domains many unrelated people's mail is at: free-mail providers (gmail.com, outlook.com) and disposable inboxes
 * (mailinator.com). An organization may not claim one (decisions.md, "People: agents, teams and organizations"):
 * it would make every person of a webmail provider one customer. The list is the `email-providers` package's
 * (docs/packages.md says why that one), read at run time from the file the routes that check it declare
 * (functions/routes.ts, `files`), so it is in no bundle; parsed once per process, into the form domains are
 * compared in (lower-case ASCII).
 */
let shared: Set<string> | undefined;

function sharedDomains(): Set<string> {
  if (!shared) {
    const listed = JSON.parse(packageFileText(SHARED_DOMAINS_FILE)) as string[];
    shared = new Set(listed.map((d) => domainName(d) ?? d.toLowerCase()));
  }
  return shared;
}

/**
 * Whether a domain (as domainName gives it) is a shared one. Only the domain itself is looked up, not its parents:
 * the list names some public suffixes (`net.ua`), whose every company's domain a parent match would refuse.
 */
export const isSharedDomain = (domain: string): boolean => sharedDomains().has(domain);
