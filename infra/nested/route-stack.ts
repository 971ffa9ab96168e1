import { join } from 'node:path';
import { NestedStack } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { routes } from '#functions/routes.ts';
import { DeskpipeFunction } from '../constructs/deskpipe-function.ts';
import type { MailReceiving } from '../constructs/mail-receiving.ts';
import type { StageParts } from './stage-parts.ts';

export interface RouteStackProps extends StageParts {
  /** The mail bucket's owner: the download routes read their prefix of it. */
  mail: MailReceiving;
}

/**
 * The routes' functions (a nested stack of the stage): one per route of the route table, each granted exactly the
 * table actions and index queries it declares, and the download routes their prefix of the mail bucket. The API
 * (ApiStack) invokes them; apart from it, so neither the API's methods nor the functions fill a stack.
 */
export class RouteStack extends NestedStack {
  /** Each route's function, by the route's name. */
  readonly functions: Readonly<Record<string, DeskpipeFunction>>;

  constructor(scope: Construct, id: string, props: RouteStackProps) {
    super(scope, id, { description: `deskpipe ${props.stage}: a function per route of the route table` });
    const functions: Record<string, DeskpipeFunction> = {};
    for (const route of routes) {
      const fn = new DeskpipeFunction(this, route.name, {
        ...props.functionDefaults,
        entry: join(props.functionDefaults.projectRoot, route.entry),
        files: 'files' in route ? route.files : undefined,
      });
      if (route.tableActions.length > 0) fn.bindTable(props.table, route.tableActions);
      if ('indexQueries' in route && route.indexQueries) fn.bindIndexQueries(props.table, route.indexQueries);
      if (route.mailObjects) props.mail.grantRead(fn, route.mailObjects);
      functions[route.name] = fn;
    }
    this.functions = functions;
  }
}
