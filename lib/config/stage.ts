/**
 * Which stage the code runs in, where it matters: only the local stage (`npm start`, and the tests, which run
 * the same local gateway) may deliver webhooks to this machine (decisions.md, "Webhooks"). The local gateway
 * sets DESKPIPE_STAGE=local for the functions it runs in its process; the deployed stack sets no such variable,
 * and code in a Lambda runtime (AWS_LAMBDA_FUNCTION_NAME is set) is never the local stage, whatever it says.
 */
export const STAGE_VARIABLE = 'DESKPIPE_STAGE';
export const LOCAL_STAGE = 'local';

export function isLocalStage(): boolean {
  return process.env[STAGE_VARIABLE] === LOCAL_STAGE && !process.env.AWS_LAMBDA_FUNCTION_NAME;
}
