import { createHash } from 'node:crypto';
import { route } from '#functions/routes.ts';
import { publicHandler } from '#lib/http/public-handler.ts';

/**
 * GET /docs: the OpenAPI document rendered for people by Swagger UI, its script and style sheet served by
 * this API itself (GET /docs/{asset}), so the page needs nothing from elsewhere, and its Content-Security-Policy
 * allows nothing else (decisions.md, "Limits on input").
 */
export const handler = publicHandler({ route: route('docsPage') }, ({ stagePath }) => {
  const script = startScript(stagePath);
  return {
    statusCode: 200,
    contentType: 'text/html; charset=utf-8',
    body: page(stagePath, script),
    headers: { 'Cache-Control': 'public, max-age=300', 'Content-Security-Policy': policy(script) },
  };
});

/**
 * What Swagger UI needs: its own script and style sheet, and this one inline script (allowed by its hash, as
 * the page is cached); the document fetched from the API; the style sheet's icons, which are data: URLs. (It
 * sets styles through the DOM, which the policy does not govern: no 'unsafe-inline'.) Nothing may frame the
 * page, and it posts no form. test/system/docs-page.test.ts renders it and fails on anything refused.
 */
function policy(script: string): string {
  const hash = createHash('sha256').update(script).digest('base64');
  return [
    "default-src 'none'",
    `script-src 'self' 'sha256-${hash}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function startScript(stagePath: string): string {
  const url = JSON.stringify(`${stagePath}/api/openapi.json`);
  return `
SwaggerUIBundle({ url: ${url}, dom_id: '#swagger-ui', deepLinking: true, displayOperationId: true, validatorUrl: null });
`;
}

function page(stagePath: string, script: string): string {
  const at = (path: string) => `${stagePath}${path}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>deskpipe API reference</title>
<link rel="stylesheet" href="${at('/docs/swagger-ui.css')}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${at('/docs/swagger-ui-bundle.js')}"></script>
<script>${script}</script>
</body>
</html>
`;
}
