import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { backtestRule } from '#lib/rules/backtest.ts';
import { findRule } from '#lib/rules/resource.ts';

/** POST /api/rules/{rule}/backtest: what a saved rule would have done over a window of the feed; writes nothing. */
export const handler = httpHandler(
  {
    route: route('backtestRule'),
    body: true,
    pathObject: (caller, { rule }) => findRule(caller.accountId, rule ?? ''),
  },
  async (request, caller) => ({
    statusCode: 200,
    body: { data: await backtestRule(caller.accountId, request.params.rule ?? '', request.body) },
  }),
);
