/** Addresses as the e-mail channel compares them: case-insensitively, `local+token@domain` as `local@domain`. */

/** The address without its `+token` (lower-case), and the token. */
export function splitAddress(address: string): { base: string; token: string | undefined } {
  const lower = address.trim().toLowerCase();
  const at = lower.lastIndexOf('@');
  if (at < 0) return { base: lower, token: undefined };
  const local = lower.slice(0, at);
  const plus = local.indexOf('+');
  if (plus < 0) return { base: lower, token: undefined };
  return { base: `${local.slice(0, plus)}${lower.slice(at)}`, token: local.slice(plus + 1) || undefined };
}
