import { AsyncLocalStorage } from 'node:async_hooks';
import { dynamo } from '#lib/data/store/client.ts';
import { isTransactionConflict } from '#lib/data/store/errors.ts';
import { shapeOf } from '#test/support/item-sizes.ts';

/**
 * Why a bench request answered what it did (the contention bench's 503s): each request sent inside `traced` has
 * its store calls' failures recorded (by command, error and, for a refused single write, the kind of item), on
 * the service's own client outside the conflict wrapper, so that a 503 can be told apart: conflicts until the
 * retries were spent, the request's deadline, or a plain write refused and not decided again.
 */
interface Trace {
  started: number;
  /** TransactWriteItems calls cancelled by a conflict. */
  cancelled: number;
  /** The last failure seen: `Command: ErrorName [item kind]`. */
  last?: string;
}

const traces = new AsyncLocalStorage<Trace>();
const NAME = 'benchAnswerCauses';

type Input = Record<string, unknown>;

function failureOf(command: string, error: unknown, input: Input, accountId: string): string {
  const name = (error as { name?: string }).name ?? 'Error';
  const key = (input.Key ?? input.Item ?? firstOfBatch(input)) as { pk?: string; sk?: string } | undefined;
  const shape = key?.pk ? ` ${generalised(shapeOf({ pk: key.pk, sk: String(key.sk) }, [accountId]))}` : '';
  return `${command.replace(/Command$/, '')}: ${name}${shape}`;
}

/** A BatchWriteItem's first item (its put's item or its delete's key): which of the plain writes it was. */
function firstOfBatch(input: Input): unknown {
  const requests = Object.values((input.RequestItems ?? {}) as Record<string, Input[]>)[0]?.[0];
  const put = requests?.PutRequest as Input | undefined;
  const remove = requests?.DeleteRequest as Input | undefined;
  return put?.Item ?? remove?.Key;
}

const generalised = (shape: string) => shape.replace(/#\d+$/, '#<n>').replace(/ \d+$/, ' <n>');

/** Installs the recorder until `uninstall()`; `traced` runs one request and says why it ended as it did. */
export function answerCauses(accountId: string) {
  /**
   * Store calls of the traced requests, and those the conflict wrapper refused before the store (a cancelled
   * transaction, a refused write): what a landed change costs the store, whatever the machine's speed.
   */
  const sent = { calls: 0, refused: 0 };
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const trace = traces.getStore();
      if (trace) sent.calls++;
      try {
        return await next(args);
      } catch (error) {
        if (trace) {
          const command = String(context.commandName);
          if (isTransactionConflict(error)) sent.refused++;
          if (command === 'TransactWriteItemsCommand') trace.cancelled++;
          trace.last = failureOf(command, error, args.input as Input, accountId);
        }
        throw error;
      }
    },
    { step: 'initialize', name: NAME, priority: 'normal' },
  );
  const causes = new Map<string, number>();
  return {
    causes,
    sent,
    /** Runs `send` traced; a 503 is counted under its cause (last failure, cancelled commits, seconds taken). */
    traced: async (send: () => Promise<{ statusCode: number }>) => {
      const trace: Trace = { started: performance.now(), cancelled: 0 };
      const answer = await traces.run(trace, send);
      if (answer.statusCode === 503) {
        const seconds = Math.round((performance.now() - trace.started) / 100) / 10;
        const cause = `${trace.last ?? 'no store failure'}; ${trace.cancelled} commits cancelled; ${seconds} s`;
        causes.set(cause, (causes.get(cause) ?? 0) + 1);
      }
      return answer;
    },
    uninstall: () => void dynamo.middlewareStack.remove(NAME),
  };
}
