import { CommandError, runCommand } from '#infra/admin/commands.ts';

/** What an operator sees of one admin command: its exit code, stdout and stderr. */
export interface AdminRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs one admin command in this process, against this process's store (DYNAMODB_ENDPOINT, TABLE_NAME), and
 * answers as infra/admin/cli.ts prints it: the JSON on stdout and 0, or a CommandError's message on stderr and
 * its exit code. test/system/admin-cli-process.test.ts checks that the real process keeps that contract.
 */
export async function admin(...args: string[]): Promise<AdminRun> {
  try {
    const output = await runCommand(args);
    return { code: 0, stdout: `${JSON.stringify(output, null, 2)}\n`, stderr: '' };
  } catch (error) {
    if (error instanceof CommandError)
      return { code: error.exitCode, stdout: '', stderr: `${error.message}\n` };
    throw error;
  }
}
