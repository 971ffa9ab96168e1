import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_PATH } from '#infra/openapi/write.ts';
import { useGateway } from '#test/support/http.ts';

/** The API serves its contract (decisions.md, "Contract"); the document itself is checked in test/unit/openapi.test.ts. */
const document = JSON.parse(readFileSync(DOCUMENT_PATH, 'utf8'));

describe('GET /api/openapi.json and GET /docs', () => {
  const gateway = useGateway();

  it('serve the document without a key, with this deployment as its server', async () => {
    const response = await gateway.call('GET', '/api/openapi.json');
    expect(response.status).toBe(200);
    const { servers, ...rest } = response.body;
    expect(rest).toEqual(document);
    expect(servers).toEqual([{ url: expect.stringMatching(/^https?:\/\//) }]);
  });

  it('serve the page and its own script and style sheet, and 404 for any other file', async () => {
    const page = await gateway.call('GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<script src="/docs/swagger-ui-bundle.js">');
    expect(page.text).not.toMatch(/https?:\/\//); // nothing from elsewhere
    const script = await gateway.call('GET', '/docs/swagger-ui-bundle.js');
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(script.text.length).toBeGreaterThan(100_000);
    const style = await gateway.call('GET', '/docs/swagger-ui.css');
    expect(style.headers.get('content-type')).toMatch(/^text\/css/);
    const other = await gateway.call('GET', '/docs/package.json');
    expect(other.status).toBe(404);
  });
});
