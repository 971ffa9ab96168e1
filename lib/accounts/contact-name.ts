/** A contact's full name: first and last name joined by one space, trimmed (decisions.md). */
export function fullName(first: string, last: string | null): string {
  return `${first} ${last ?? ''}`.trim();
}
