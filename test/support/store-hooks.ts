import { dynamo } from '#lib/data/store/client.ts';

/**
 * A hook on the service's DynamoDB client (the local gateway runs the handlers in this process): before the first
 * call of `command` (`TransactWriteItemsCommand`) whose input names `needle` (or that `needle` accepts), runs `work`
 * once, its own calls unhooked; then the call goes on. A change whose commit is so held lands after what `work`
 * does, deterministically: a race's one order, made to happen. A later hook replaces one that has not run.
 */
type Needle = string | ((input: Record<string, unknown>) => boolean);

let hook: { command: string; needle: Needle; work: () => Promise<unknown> } | undefined;
let installed = false;

export function beforeCallOnce(command: string, needle: Needle, work: () => Promise<unknown>): void {
  if (!installed) {
    installed = true;
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const h = hook;
        const input = (args as { input?: Record<string, unknown> }).input ?? {};
        if (h && context.commandName === h.command && names(h.needle, input)) {
          hook = undefined;
          await h.work();
        }
        return next(args);
      },
      { step: 'initialize', name: 'beforeCallOnce', priority: 'low' },
    );
  }
  hook = { command, needle, work };
}

const names = (needle: Needle, input: Record<string, unknown>) =>
  typeof needle === 'string' ? JSON.stringify(input).includes(needle) : needle(input);
