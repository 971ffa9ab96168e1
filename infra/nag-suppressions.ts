import { Names, type Stack, Stack as StackOf } from 'aws-cdk-lib';
import type { Bucket, CfnBucket } from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import type { IConstruct } from 'constructs';

/**
 * cdk-nag (AwsSolutions) findings we accept, each with its reason. test/system/stack.test.ts runs the rules on
 * every stage and fails on any finding not listed here.
 */
export function suppressAcceptedFindings(stack: Stack): void {
  // The stage's nested stacks too (made before this is called): they are parts of the one stack.
  NagSuppressions.addStackSuppressions(
    stack,
    [
      {
        id: 'AwsSolutions-IAM4',
        reason:
          'Functions use AWSLambdaBasicExecutionRole, the AWS-maintained policy for writing their own logs; it grants nothing on data.',
        appliesTo: ['Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole'],
      },
      {
        id: 'AwsSolutions-IAM5',
        reason:
          'X-Ray tracing needs xray:PutTraceSegments/PutTelemetryRecords, which IAM only grants on "*".',
        appliesTo: ['Resource::*'],
      },
      {
        id: 'AwsSolutions-SMG4',
        reason:
          'The API key hash secret cannot rotate on a schedule: every stored key hash is made under it, so a new ' +
          'one would invalidate every API key (docs/api-keys.md, "The hash at rest").',
      },
      {
        id: 'AwsSolutions-APIG2',
        reason:
          'Requests are validated in the handlers (valibot), which answer 422 in the documented Laravel shape; API Gateway request validation would answer a different body.',
      },
      {
        id: 'AwsSolutions-APIG3',
        reason:
          'No WAF yet: the API is for servers holding API keys, throttled per stage; a WebACL is an operator add-on described in docs/deploy.md.',
      },
      {
        id: 'AwsSolutions-COG4',
        reason:
          'Clients authenticate with API keys resolved by the TOKEN authorizer; there are no Cognito users.',
      },
      {
        id: 'AwsSolutions-APIG6',
        reason:
          'JSON access logs are on for every request; execution logging needs the account-wide API Gateway CloudWatch role, which this stack does not own.',
      },
    ],
    true,
  );
}

/** The ANY methods that answer 405 are deliberately without the authorizer: 405 comes before authentication. */
export function suppressOpenMethodNotAllowed(method: IConstruct): void {
  NagSuppressions.addResourceSuppressions(method, [
    {
      id: 'AwsSolutions-APIG4',
      reason:
        'Mock integration answering 405 with Allow; it reaches no function and no data, and answers before auth as the local gateway does.',
    },
  ]);
}

/** Routes without a key (the route table's `auth: false`): the published contract and its page, no data. */
export function suppressPublicRoute(method: IConstruct): void {
  NagSuppressions.addResourceSuppressions(method, [
    {
      id: 'AwsSolutions-APIG4',
      reason:
        'Public by design (decisions.md, "Contract"): the OpenAPI document and its docs page; these functions have no table access.',
    },
  ]);
}

/** A queue that is itself a dead-letter destination (of the stream's mapping, of the inbound function). */
export function suppressDeadLetterDestination(
  queue: IConstruct,
  reason = "This queue is itself the dead-letter destination (on-failure destination) of the table stream's event source mapping for the webhook fan-out; nothing consumes it to fail again, and an alarm watches its depth.",
): void {
  NagSuppressions.addResourceSuppressions(queue, [{ id: 'AwsSolutions-SQS3', reason }]);
}

/**
 * A bucket of the service's data (mail, import uploads) logs no server access: the logs would copy every object key
 * (and requester) into a second bucket that no lifecycle of ours governs; CloudTrail data events are the operator's.
 */
export function suppressBucketAccessLogs(bucket: IConstruct, what: string): void {
  NagSuppressions.addResourceSuppressions(bucket, [
    {
      id: 'AwsSolutions-S1',
      reason: `Server access logs would copy every object key (and requester) into a second bucket that no lifecycle of ours governs; ${what} objects are read and written by the functions granted them only (their own logs), and CloudTrail S3 data events are the operator add-on described in docs/deploy.md.`,
    },
  ]);
}

/**
 * GetObject/PutObject on `raw/*`, `mail/*` and `attachments/*` of the mail bucket: every mail is its own object,
 * named by ids the functions learn at run time (SES's message id, the inbound id), so the grant is the prefix. Which
 * account may read which object is decided by the domain (the message's recorded source, found within the caller's
 * account).
 */
export function suppressMailObjectPrefixes(bucket: Bucket, grantee: IConstruct, prefixes: string[]): void {
  suppressObjectPrefixes(
    bucket,
    grantee,
    prefixes,
    "Objects of the mail bucket under raw/ (SES writes raw/<message id>), mail/ (each account's copy, mail/<account>/<inbound id>.eml) and attachments/ (attachments/<account>/<inbound id>/<attachment id>): each function gets only the prefixes it reads or writes; the account check is the domain's (the message's recorded source).",
  );
}

/**
 * An object grant on prefixes of a bucket, suppressed on the function granted, for those prefixes only: the
 * bucket's ARN is `<bucket>.Arn` in the bucket's stack and a parameter (named after the bucket's unique id) in
 * another stack.
 */
export function suppressObjectPrefixes(
  bucket: Bucket,
  grantee: IConstruct,
  prefixes: string[],
  reason: string,
): void {
  const cfnBucket = bucket.node.defaultChild as CfnBucket;
  // In its own stack; from another nested stack (its output); from a nested stack when the bucket is the parent's.
  const arn = `(${StackOf.of(bucket).getLogicalId(cfnBucket)}\\.Arn|referenceto\\w*Outputs${Names.uniqueId(cfnBucket)}Arn|referenceto${Names.uniqueId(cfnBucket)}Arn)`;
  NagSuppressions.addResourceSuppressions(
    grantee,
    [
      {
        id: 'AwsSolutions-IAM5',
        reason,
        appliesTo: prefixes.map((prefix) => ({
          regex: `/^Resource::<${arn}>\\/${prefix.replace('/', '\\/')}\\*$/g`,
        })),
      },
    ],
    true,
  );
}
