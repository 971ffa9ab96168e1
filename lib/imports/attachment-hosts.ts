import type { AttachmentFiles } from './attachments.ts';
import type { SourceHttp } from './http.ts';
import { SourceHostRefused } from './source-errors.ts';
import type { SourceVendor } from './source-url.ts';

/**
 * Where a vendor documents its attachments' bytes (spec/decisions.md, "Imports": fetched only from those hosts):
 * besides the source's own origin (Zendesk's `content_url` is `https://<subdomain>.zendesk.com/attachments/token/…`,
 * which redirects to a short-lived URL on zdusercontent.com), Zendesk's `*.zdusercontent.com` and Freshdesk's
 * `attachment_url`, a presigned URL under `https://s3.amazonaws.com/cdn.freshdesk.com/`. Under the operator's
 * override (IMPORT_*_URL) the override's host alone: none of these. A pattern is a host (`*.` any subdomain of it),
 * optionally followed by the path its URLs start with; the vendor's hosts are reached over https only.
 */
export const VENDOR_ATTACHMENT_HOSTS: Record<SourceVendor, readonly string[]> = {
  zendesk: ['*.zdusercontent.com'],
  freshdesk: ['s3.amazonaws.com/cdn.freshdesk.com/'],
};

const OVERRIDE: Record<SourceVendor, string> = {
  zendesk: 'IMPORT_ZENDESK_URL',
  freshdesk: 'IMPORT_FRESHDESK_URL',
};

/** The hosts besides the source's origin a vendor's attachments may be fetched from: none under an override. */
export function attachmentHostsOf(vendor: SourceVendor, env = process.env): readonly string[] {
  return env[OVERRIDE[vendor]] ? [] : VENDOR_ATTACHMENT_HOSTS[vendor];
}

/** Whether `url` is on the source's own origin or matches one of `hosts` (https only). */
export function attachmentUrlAllowed(url: URL, origin: string, hosts: readonly string[]): boolean {
  if (url.username !== '' || url.password !== '') return false;
  if (url.origin === origin) return true;
  if (url.protocol !== 'https:' || url.port !== '') return false;
  return hosts.some((pattern) => {
    const slash = pattern.indexOf('/');
    const host = slash < 0 ? pattern : pattern.slice(0, slash);
    const path = slash < 0 ? '/' : pattern.slice(slash);
    const hostMatches = host.startsWith('*.')
      ? url.hostname.endsWith(host.slice(1)) && url.hostname.length > host.length - 1
      : url.hostname === host;
    return hostMatches && url.pathname.startsWith(path);
  });
}

/** `url` parsed, when allowed (attachmentUrlAllowed); else SourceHostRefused: never requested. */
export function attachmentUrl(url: string, origin: string, hosts: readonly string[] = []): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SourceHostRefused('an attachment URL that does not parse was refused');
  }
  if (!attachmentUrlAllowed(parsed, origin, hosts))
    throw new SourceHostRefused(
      `an attachment on a host the source does not use (${parsed.host}) was refused`,
    );
  return parsed;
}

/** A vendor's attachments: fetched by their URL with its client (these hosts only, its pacing and credentials). */
export function fetchedFiles(http: SourceHttp): AttachmentFiles {
  return {
    getBytes(attachment, maxBytes) {
      if (attachment.url === undefined) throw new SourceHostRefused('an attachment with no URL was refused');
      return http.getBytes(attachment.url, maxBytes);
    },
  };
}
