import { ValidationFailed } from '#lib/errors.ts';

export type SourceVendor = 'zendesk' | 'freshdesk';

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const FIELD: Record<SourceVendor, string> = { zendesk: 'subdomain', freshdesk: 'domain' };
const OVERRIDE: Record<SourceVendor, string> = {
  zendesk: 'IMPORT_ZENDESK_URL',
  freshdesk: 'IMPORT_FRESHDESK_URL',
};

/**
 * `https://<name>.<vendor>.com`, or the operator's override (operations.md, "Imports": the environment only, for a
 * local server speaking the vendor's API; no request can set it). The name is checked either way.
 */
export function sourceBaseUrl(vendor: SourceVendor, name: string, env = process.env): string {
  const field = FIELD[vendor];
  if (!NAME.test(name))
    throw ValidationFailed.field(
      field,
      `The ${field} must be 1 to 63 lower-case letters, digits or hyphens, starting with a letter or digit.`,
    );
  const override = env[OVERRIDE[vendor]];
  if (!override) return `https://${name}.${vendor}.com`;
  const url = new URL(override);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`${OVERRIDE[vendor]} must be an http(s) URL`);
  return url.origin;
}
