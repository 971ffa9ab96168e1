/**
 * Order keys: creation time in epoch microseconds then a per-account number, both zero-padded, so a descending
 * Query is newest first with the number breaking ties. Every entity kept by the index engine is keyed by one.
 */
export const orderKeys = {
  of: (createdMicros: number, number: number) =>
    `${String(createdMicros).padStart(17, '0')}#${String(number).padStart(10, '0')}`,
  /** The creation microseconds and number an order key holds. */
  parts: (orderKey: string) => {
    const [micros, number] = orderKey.split('#');
    return { createdMicros: Number(micros), number: Number(number) };
  },
  length: 28,
  /** Lowest possible order key: postings sort above a dimension's `#COUNT` item. */
  first: '0',
};
