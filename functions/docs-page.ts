import { route } from '#functions/routes.ts';
import { publicHandler } from '#lib/http/public-handler.ts';

/**
 * GET /docs: the OpenAPI document rendered for people by Swagger UI, its script and style sheet served by
 * this API itself (GET /docs/{asset}), so the page needs nothing from elsewhere.
 */
export const handler = publicHandler({ route: route('docsPage') }, ({ stagePath }) => ({
  statusCode: 200,
  contentType: 'text/html; charset=utf-8',
  body: page(stagePath),
  headers: { 'Cache-Control': 'public, max-age=300' },
}));

function page(stagePath: string): string {
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
<script>
SwaggerUIBundle({ url: ${JSON.stringify(at('/api/openapi.json'))}, dom_id: '#swagger-ui', deepLinking: true, displayOperationId: true, validatorUrl: null });
</script>
</body>
</html>
`;
}
