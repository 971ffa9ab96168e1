/**
 * How `apply` matches a file's entries to what an account already has: team, pipeline and stage by name,
 * agent and contact by e-mail (both case-insensitive), category by slug (always lower-case).
 */
export const nameKey = (entity: { name: string }) => entity.name.toLowerCase();
export const emailKey = (entity: { email: string }) => entity.email.toLowerCase();
export const slugKey = (entity: { slug: string }) => entity.slug;

/** How many of the file's entries match no existing entity, so need a new id. */
export function countNew<Old, In>(old: Old[], input: In[], keyOf: (item: Old | In) => string): number {
  const known = new Set(old.map(keyOf));
  return input.filter((item) => !known.has(keyOf(item))).length;
}

/** Existing entities updated from the file where their key matches, plus the file's new ones, by id. */
export function mergeBy<Old extends { id: number }, In>(
  old: Old[],
  input: In[],
  keyOf: (item: Old | In) => string,
  build: (item: In, prior: Old | undefined) => Old,
): Old[] {
  const byKey = new Map(old.map((o) => [keyOf(o), o]));
  const result = new Map(old.map((o) => [o.id, o]));
  for (const item of input) {
    const built = build(item, byKey.get(keyOf(item)));
    result.set(built.id, built);
  }
  return [...result.values()].sort((a, b) => a.id - b.id);
}

/** The ids of the entities `names` name (case-insensitively), each once, ascending; a name of none is skipped. */
export function idsNamed(entities: { id: number; name: string }[], names: string[]): number[] {
  const byName = new Map(entities.map((e) => [nameKey(e), e.id]));
  return [...new Set(names.flatMap((n) => byName.get(n.toLowerCase()) ?? []))].sort((x, y) => x - y);
}
