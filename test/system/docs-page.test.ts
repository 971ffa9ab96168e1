import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import chromium from '@sparticuz/chromium';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { freePort } from '#infra/local/dynamodb-local.ts';
import { ROOT } from '#infra/local/environment.ts';
import { DOCS_PAGE_SECTIONS } from '#test/support/contract.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * The docs page in a real browser: `npm start` serves /docs, headless Chromium (the build the
 * @sparticuz/chromium package ships, so `npm ci` brings it) renders it, and every operation of the route table
 * is on the page, with nothing fetched from anywhere but the service itself and nothing its
 * Content-Security-Policy refuses.
 */
let service: ChildProcess | undefined;
let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
  // npm start runs in its own process group: stop npm and everything under it.
  if (service?.pid) process.kill(-service.pid, 'SIGTERM');
});

async function startService(): Promise<string> {
  const port = await freePort();
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    // The suite's DynamoDB Local (test/support/global-setup.ts), a table of this file's own.
    env: {
      ...process.env,
      PORT: String(port),
      TABLE_NAME: `deskpipe-docs-${randomBytes(4).toString('hex')}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  service = child;
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  try {
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error('npm start exited');
        return output.includes('is listening on');
      },
      { timeout: 60_000, label: 'npm start to listen' },
    );
  } catch (error) {
    throw new Error(`npm start did not start (${(error as Error).message}):\n${output}`);
  }
  return `http://127.0.0.1:${port}`;
}

describe('GET /docs in a browser', () => {
  it('renders every operation of the route table from the service alone', async () => {
    const base = await startService();
    browser = await puppeteer.launch({
      executablePath: await chromium.executablePath(),
      // The package's flags for a headless shell, and no background connections (the network is closed).
      args: [
        ...chromium.args,
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
      ],
      headless: 'shell',
    });
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (request) => {
      requested.push(request.url());
    });
    const errors: string[] = [];
    page.on('pageerror', (error) => {
      errors.push(String(error));
    });
    // What the page's Content-Security-Policy refused: Swagger UI must need nothing it forbids.
    await page.evaluateOnNewDocument(`
      window.refused = [];
      document.addEventListener('securitypolicyviolation', (event) => {
        window.refused.push(event.effectiveDirective + ' ' + event.blockedURI);
      });
    `);

    const response = await page.goto(`${base}/docs`, { waitUntil: 'networkidle0' });
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toMatch(/^default-src 'none'; /);
    await page.waitForFunction(`document.querySelectorAll('.opblock').length >= ${routes.length}`, {
      timeout: 30_000,
    });
    const rendered = await page.$$eval('.opblock', (blocks) =>
      blocks.map((block) => ({
        method: block.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '',
        path: block.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '',
        name: block.querySelector('.opblock-summary-operation-id')?.textContent?.trim() ?? '',
      })),
    );
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(rendered.sort(byName)).toEqual(
      routes.map((r) => ({ method: r.method, path: r.path, name: r.name })).sort(byName),
    );
    // Its sections in the order a user meets the domain (the document's tags).
    const sections = await page.$$eval('.opblock-tag-section .opblock-tag', (tags) =>
      tags.map((tag) => tag.getAttribute('data-tag') ?? ''),
    );
    expect(sections).toEqual(DOCS_PAGE_SECTIONS);
    // An operation opened: its parameters, body schema and example render under the same policy.
    await page.click('#operations-Tickets-createTicket .opblock-summary');
    // 30 s: side by side with a second npm test (load ~16) the rendering took over 10 s.
    await page.waitForSelector('#operations-Tickets-createTicket .opblock-body .model-example', {
      timeout: 30_000,
    });
    expect(await page.title()).toBe('deskpipe API reference');
    expect(errors).toEqual([]);
    expect(await page.evaluate('window.refused')).toEqual([]);
    expect(requested.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:'))).toEqual([]);
    expect(requested).toContain(`${base}/api/openapi.json`);
  }, 120_000);
});
