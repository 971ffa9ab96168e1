import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';

/**
 * Long texts stored compressed (docs/data-model.md, "Compressed texts"). DynamoDB charges a write by the item's
 * size, 1 unit a KB (2 in a transaction), and a ticket's event and item are mostly its description: a mail of 3 KB
 * of prose is ~1.4 KB as Brotli (quality 5: ~0.1 ms to pack a 3.4 KB event, ~0.02 ms to unpack, on this machine
 * idle; docs/data-model.md, "Compressed texts"), so a create and an update each write a few units fewer, and every
 * read of them reads fewer bytes.
 *
 * Only a text that is long enough to cross a KB and that packing shortens is packed; what is packed says so on
 * its item (an event's `enc`, an entity's `packed` list), so items written before, or left as they were, read as
 * they always did.
 */

/** How a packed text is encoded: Brotli. The one value of an event's `enc`. */
export const PACKED_ENCODING = 'br';

/** Texts shorter than this stay as they are: under a KB an item costs the same packed or not. */
export const PACK_FROM_BYTES = 700;

/** `text` packed, or undefined when packing would not shorten it by a tenth (already compressed, too short). */
export function pack(text: Buffer): Buffer | undefined {
  if (text.length < PACK_FROM_BYTES) return undefined;
  const packed = brotliCompressSync(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 5,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
    },
  });
  return packed.length < text.length * 0.9 ? packed : undefined;
}

/** The text `pack` packed. */
export function unpack(packed: Uint8Array): Buffer {
  return brotliDecompressSync(packed);
}
