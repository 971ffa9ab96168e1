import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { KMS_KEY_VARIABLE } from '#lib/data/imports/kms-keys.ts';
import { UPLOAD_BUCKET_VARIABLE } from '#lib/data/imports/uploads.ts';
import { suppressObjectPrefixes } from '../nag-suppressions.ts';
import type { DeskpipeFunction } from './deskpipe-function.ts';
import { privateBucket } from './private-bucket.ts';

/**
 * What imports keep deployed besides the table (docs/imports.md, "Credentials", "Uploads"):
 *
 * - **The secrets key**: a KMS key of the stage's (rotated yearly) whose data keys seal each job's source credentials
 *   (envelope encryption: lib/imports/credentials.ts, lib/data/imports/kms-keys.ts). `createImport` may only make
 *   data keys (GenerateDataKey) and the import runner may only unwrap them (Decrypt), each with an encryption
 *   context naming the account and the job and nothing else; no other function of the stage is granted the key.
 * - **The upload bucket**: an ndjson job's file, `imports/<account>/<id>.ndjson`, PUT by the customer to the
 *   presigned URL `createImport` answers (signed with its own role, so it may PutObject there and nothing else) and
 *   read by range by the runner. Private, SSE-S3, TLS only; every object expires after UPLOAD_KEEP_DAYS.
 */
export const UPLOAD_PREFIX = 'imports/';
/**
 * How long an uploaded file is kept: a job reads it within the hour it runs (100,000 tickets at ~30 a second), and
 * the longest a job may stay unfinished is the 7 days a paused one is kept (decisions.md), so no job outlives its file.
 */
export const UPLOAD_KEEP_DAYS = 7;
/** The encryption context keys every use of the secrets key must give (lib/imports/credentials.ts). */
const CONTEXT_KEYS = ['account', 'job'];

export interface ImportStorageProps {
  namePrefix: string;
  /** Keep the key and the bucket when the stack is deleted (the stage's protectData). */
  protectData: boolean;
}

export class ImportStorage extends Construct {
  readonly secretsKey: Key;
  readonly uploads: Bucket;

  constructor(scope: Construct, id: string, props: ImportStorageProps) {
    super(scope, id);
    const removalPolicy = props.protectData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.secretsKey = new Key(this, 'SecretsKey', {
      alias: `${props.namePrefix}-import-secrets`,
      description: "Wraps the data keys that seal import jobs' source credentials (docs/imports.md).",
      enableKeyRotation: true,
      pendingWindow: Duration.days(7),
      removalPolicy,
    });
    this.uploads = privateBucket(this, 'Uploads', {
      keepDays: UPLOAD_KEEP_DAYS,
      ruleId: 'uploads-kept-days',
      protectData: props.protectData,
      what: 'import upload',
    });
  }

  /** `createImport`: seals a job's credentials (GenerateDataKey) and presigns its file's PUT (PutObject). */
  grantStart(fn: DeskpipeFunction): void {
    this.grantKey(fn, 'kms:GenerateDataKey');
    this.grantUploads(fn, ['s3:PutObject']);
  }

  /**
   * The import runner: opens a job's credentials (Decrypt), looks for its file and reads it by range (GetObject,
   * which HeadObject needs too; ListBucket so a file not uploaded yet is a 404, not a 403).
   */
  grantRun(fn: DeskpipeFunction): void {
    this.grantKey(fn, 'kms:Decrypt');
    this.grantUploads(fn, ['s3:GetObject']);
    fn.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.uploads.bucketArn] }),
    );
  }

  private grantKey(fn: DeskpipeFunction, action: string): void {
    fn.addEnvironment(KMS_KEY_VARIABLE, this.secretsKey.keyArn);
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: [action],
        resources: [this.secretsKey.keyArn],
        // Only with an encryption context of exactly {account, job}.
        conditions: {
          'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': CONTEXT_KEYS },
          Null: { 'kms:EncryptionContextKeys': 'false' },
        },
      }),
    );
  }

  private grantUploads(fn: DeskpipeFunction, actions: string[]): void {
    fn.addEnvironment(UPLOAD_BUCKET_VARIABLE, this.uploads.bucketName);
    fn.addToRolePolicy(
      new PolicyStatement({ actions, resources: [this.uploads.arnForObjects(`${UPLOAD_PREFIX}*`)] }),
    );
    suppressObjectPrefixes(
      this.uploads,
      fn,
      [UPLOAD_PREFIX],
      "Objects of the import upload bucket under imports/ (imports/<account>/<import id>.ndjson): each job's file is named by ids made at run time; the service names the key, never a request's text.",
    );
  }
}
