/** Numbers in sort keys: zero-padded, so that lexical order is numeric order (the key builders' shared spelling). */

/** Integer ids are zero-padded in sort keys so that lexical order is numeric order. */
export const padId = (id: number): string => String(id).padStart(10, '0');

/** Epoch ms, zero-padded to 15 digits, so that lexical order is time order (the due index, pending deliveries). */
export const dueMs = (ms: number) => String(Math.max(0, Math.floor(ms))).padStart(15, '0');
