import { vi } from 'vitest';

/**
 * Every line written to stdout or stderr while `work` runs (the logger's JSON lines, the EMF counts), as text and
 * parsed. The logger reads LOG_LEVEL when it loads, and tests run SILENT: a test that reads lines loads it under
 * another level first.
 */
export async function capturedOutput(
  work: () => Promise<unknown>,
): Promise<{ text: string; lines: Record<string, unknown>[] }> {
  const chunks: string[] = [];
  const capture = (chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    await work();
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  const text = chunks.join('');
  return {
    text,
    lines: text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
