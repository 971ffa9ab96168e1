import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { suppressBucketAccessLogs } from '../nag-suppressions.ts';

/**
 * A bucket of the service's data (the mail bucket, the import uploads): private, encrypted (SSE-S3), TLS only,
 * owned by the account, unversioned, every object expired after `keepDays` (its lifecycle rule `ruleId`), an
 * unfinished multipart upload after a day; kept when the stack is deleted if the stage protects its data.
 */
export function privateBucket(
  scope: Construct,
  id: string,
  props: { keepDays: number; ruleId: string; protectData: boolean; what: string },
): Bucket {
  const bucket = new Bucket(scope, id, {
    encryption: BucketEncryption.S3_MANAGED,
    enforceSSL: true,
    blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
    objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
    versioned: false,
    lifecycleRules: [
      {
        id: props.ruleId,
        expiration: Duration.days(props.keepDays),
        abortIncompleteMultipartUploadAfter: Duration.days(1),
      },
    ],
    removalPolicy: props.protectData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  });
  suppressBucketAccessLogs(bucket, props.what);
  return bucket;
}
