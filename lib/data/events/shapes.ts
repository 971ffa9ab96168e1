/** An event as the domain drafts it and as the API serves it (the feed's design: ../events.ts). */

/** An event as the domain describes it: plain data, written in the change's own commit. */
export interface EventDraft {
  type: string;
  /** The resource as its GET answers it after the change. */
  object: unknown;
  /** The changed fields' values before the change (updates only). */
  previous?: Record<string, unknown>;
  /** More fields of `data`, beside the object (ticket.sla_breached: `metric`, `due_at`). */
  extra?: Record<string, unknown>;
  /** The version the change gives the object (the number in its ETag). */
  version: number;
  /**
   * The import job whose change this is (lib/imports/): `import_id` at the event's top level, and on its item, so
   * that webhooks never receive it (spec/decisions.md, "Imports": endpoints get the job's `import.completed` alone).
   */
  importId?: string | undefined;
}

/** An event as the API serves it. */
export interface EventRecord {
  id: string;
  type: string;
  created_at: string;
  /** The import job whose change this is; absent on every other event. */
  import_id?: string;
  data: { object: unknown; previous?: Record<string, unknown>; version: number; [field: string]: unknown };
}
