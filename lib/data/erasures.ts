/**
 * Erasures in the store (docs/data-model.md, "Erasures"), one concern a file under lib/data/erasures/: the
 * record, the job's progress and the due entry (records.ts); the completion and the ledger (ledger.ts); the
 * objects a job changed (touched.ts); where a person's copies are found, by their references, never by a Scan
 * (refs.ts); the rewrites of the items holding them (rewrites.ts); the contact erased (contact.ts); what a keyed
 * dimension leaves once empty (dimensions.ts); the replay's candidates (candidates.ts). Nothing here decides
 * what is personal: the job (lib/erasures/) hands the rewrite.
 */
export { indexedAddresses, referencedAddresses } from './erasures/candidates.ts';
export { eraseContact } from './erasures/contact.ts';
export { deleteAddressDimensions, deleteEmptyDimension } from './erasures/dimensions.ts';
export { completeErasure, ledgerEntries, moveLegacyLedger, putLedgerEntry } from './erasures/ledger.ts';
export {
  dueErasureWindow,
  type ErasureProgress,
  type ErasureRecord,
  ErasureStepTaken,
  getErasureProgress,
  getErasureRecord,
  newErasureActions,
  postponeErasure,
  restartErasure,
  saveErasureProgress,
} from './erasures/records.ts';
export {
  deletePersonRef,
  messageItems,
  objectRefs,
  personRefs,
  personRefToken,
  type Ref,
  trashPage,
  withoutPersonRef,
} from './erasures/refs.ts';
export { putRewritten, readAgain, rewriteEvent, rewriteItem } from './erasures/rewrites.ts';
export { forgetTouched, markTouched, touchedAfter, touchedObjects } from './erasures/touched.ts';
