/**
 * A map that keeps at most `capacity` entries, forgetting the least recently used one first. For caches kept
 * in a container across invocations and keyed by something that grows with the service (accounts): without a
 * bound, a long-lived container that served many tenants would keep every one of them.
 */
export class LruMap<K, V> {
  readonly #entries = new Map<K, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error('an LruMap holds at least one entry');
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value, which becomes the most recently used. */
  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    // A Map iterates in insertion order: re-inserting moves the key to the most recent end.
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.capacity) break;
      this.#entries.delete(oldest);
    }
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }
}
