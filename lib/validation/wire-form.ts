import * as v from 'valibot';

/**
 * The form a field takes on the wire, for the OpenAPI document (infra/openapi/). The pipelines of
 * lib/validation.ts accept any value so that each field reports its own message; beside each one sits the schema a
 * client's value meets, built from the same rules, and whether the field is required. wireOf() reads it back.
 */
export interface WireForm {
  readonly schema: v.GenericSchema;
  readonly required: boolean;
}

export function wire<TInput = unknown>(schema: v.GenericSchema, required = false) {
  return v.metadata<TInput, { wire: WireForm }>({ wire: { schema, required } });
}

/** The wire form a field schema built by these helpers carries, or undefined. */
export function wireOf(schema: v.GenericSchema): WireForm | undefined {
  const s = schema as v.GenericSchema & { wrapped?: v.GenericSchema; pipe?: readonly unknown[] };
  if (s.wrapped) return wireOf(s.wrapped);
  for (const item of s.pipe ?? []) {
    const meta = item as { type?: string; metadata?: { wire?: WireForm } };
    if (meta.type === 'metadata' && meta.metadata?.wire) return meta.metadata.wire;
  }
  return undefined;
}
