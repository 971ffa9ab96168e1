import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import { ReceiptRuleSet, TlsPolicy } from 'aws-cdk-lib/aws-ses';
import { Lambda, LambdaInvocationType, S3 } from 'aws-cdk-lib/aws-ses-actions';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { emailInboundWorker } from '#functions/workers.ts';
import {
  ATTACHMENTS_PREFIX,
  MAIL_BUCKET_VARIABLE,
  MAIL_COPIES_PREFIX,
  RAW_MAIL_PREFIX,
} from '#lib/data/mail-store.ts';
import type { StageConfig } from '../config.ts';
import { suppressMailObjectPrefixes } from '../nag-suppressions.ts';
import type { DeskpipeFunction } from './deskpipe-function.ts';
import { failedMail } from './failed-mail.ts';
import { InboundQueue } from './inbound-queue.ts';
import { privateBucket } from './private-bucket.ts';
import { type WorkerFunctionProps, workerFunction } from './worker-function.ts';

/**
 * Receiving mail deployed (docs/email.md, "One code path, two worlds"): the stage's SES receipt rule set, whose
 * one rule, for the stage's domain, keeps each raw mail in the mail bucket (`raw/<SES message id>`) and then invokes
 * the inbound function asynchronously (functions/email-inbound.ts), which copies it for each account it is for
 * (`mail/<account>/…`), removes SES's object and queues each copy in its account's group of the inbound fair queue;
 * the processing function takes them from there (inbound-queue.ts: the same handler `npm start`'s queue calls,
 * which writes their `attachments/<account>/…`). The bucket is private, encrypted (SSE-S3), TLS only, and expires every object after the stage's
 * `mail.keepDays` (raw mail and attachments: decisions.md keeps them 30 days). An invocation that fails three times
 * (the table, the bucket or the queue unreachable for hours) lands in the failed-mail queue, whose alarm tells the operator;
 * the mail is still in the bucket and the queued event processes it again (docs/deploy.md, "Email inbound failures").
 */
export interface MailReceivingProps extends WorkerFunctionProps {
  mail: StageConfig['mail'];
  /** The processing function's reserved concurrency (inbound-queue.ts). */
  queueConcurrency: number;
  /** Keep the bucket when the stack is deleted (the stage's protectData). */
  protectData: boolean;
  topic?: ITopic | undefined;
}

export class MailReceiving extends Construct {
  readonly bucket: Bucket;
  readonly function: DeskpipeFunction;
  readonly inboundQueue: InboundQueue;
  readonly ruleSet: ReceiptRuleSet;
  readonly failedMail: Queue;
  readonly failedMailAlarm: Alarm;

  constructor(scope: Construct, id: string, props: MailReceivingProps) {
    super(scope, id);
    this.bucket = mailBucket(this, props);
    this.function = inboundFunction(this, props, this.bucket);
    this.inboundQueue = new InboundQueue(this, 'InboundQueue', {
      ...props,
      bucket: this.bucket,
      reservedConcurrency: props.queueConcurrency,
    });
    this.inboundQueue.grantSend(this.function);
    const failed = failedMail(this, this.function, props);
    this.failedMail = failed.queue;
    this.failedMailAlarm = failed.alarm;
    this.ruleSet = receiptRules(this, props, this.bucket, this.function);
  }

  /**
   * Lets a download route read the accounts' copies of raw mail (`mail/`) or the attachments (GetObject on that
   * prefix; ListBucket so a missing object is a 404, not a 403). SES's own objects (`raw/`) are never read by a route.
   */
  grantRead(fn: DeskpipeFunction, objects: 'raw' | 'attachments'): void {
    fn.addEnvironment(MAIL_BUCKET_VARIABLE, this.bucket.bucketName);
    const prefix = objects === 'raw' ? MAIL_COPIES_PREFIX : ATTACHMENTS_PREFIX;
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ['s3:GetObject'],
        resources: [this.bucket.arnForObjects(`${prefix}*`)],
      }),
    );
    suppressMailObjectPrefixes(this.bucket, fn, [prefix]);
    fn.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }),
    );
  }

  /**
   * Lets the erasure runner rewrite a person's raw mail and attachments (GetObject and PutObject on the accounts'
   * copies and attachments) and remove those of a ticket it purges (DeleteObject); ListBucket to list one mail's
   * attachments and so a missing object is a 404, not a 403.
   */
  grantErase(fn: DeskpipeFunction): void {
    this.grantOnCopies(fn, ['s3:GetObject', 's3:PutObject', 's3:DeleteObject']);
  }

  /**
   * Lets the trash's purge remove the accounts' copies of a purged ticket's mail (DeleteObject on the copies and
   * attachments; ListBucket to find them by their prefix).
   */
  grantPurge(fn: DeskpipeFunction): void {
    this.grantOnCopies(fn, ['s3:DeleteObject']);
  }

  /**
   * Lets the import runner copy a source's attachments in (lib/imports/attachments.ts): HeadObject (GetObject) on
   * one kept already, PutObject and AbortMultipartUpload (lib-storage's Upload) under `attachments/` only; ListBucket
   * so an object not kept yet is a 404, not a 403. Nothing of `raw/` or `mail/`.
   */
  grantImportAttachments(fn: DeskpipeFunction): void {
    fn.addEnvironment(MAIL_BUCKET_VARIABLE, this.bucket.bucketName);
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload'],
        resources: [this.bucket.arnForObjects(`${ATTACHMENTS_PREFIX}*`)],
      }),
    );
    suppressMailObjectPrefixes(this.bucket, fn, [ATTACHMENTS_PREFIX]);
    fn.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }),
    );
  }

  private grantOnCopies(fn: DeskpipeFunction, actions: string[]): void {
    fn.addEnvironment(MAIL_BUCKET_VARIABLE, this.bucket.bucketName);
    fn.addToRolePolicy(
      new PolicyStatement({
        actions,
        resources: [
          this.bucket.arnForObjects(`${MAIL_COPIES_PREFIX}*`),
          this.bucket.arnForObjects(`${ATTACHMENTS_PREFIX}*`),
        ],
      }),
    );
    suppressMailObjectPrefixes(this.bucket, fn, [MAIL_COPIES_PREFIX, ATTACHMENTS_PREFIX]);
    fn.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }),
    );
  }
}

/** The mail bucket: private, encrypted, TLS only, each object expired after the stage's `mail.keepDays`. */
function mailBucket(scope: Construct, props: MailReceivingProps): Bucket {
  return privateBucket(scope, 'Bucket', {
    keepDays: props.mail.keepDays,
    ruleId: 'mail-kept-days',
    protectData: props.protectData,
    what: 'mail',
  });
}

/** The inbound function (it routes), with its table grants and exactly the object grants it needs on the bucket. */
function inboundFunction(scope: Construct, props: MailReceivingProps, bucket: Bucket): DeskpipeFunction {
  const fn = workerFunction(scope, emailInboundWorker, props);
  fn.addEnvironment(MAIL_BUCKET_VARIABLE, bucket.bucketName);
  // Sizes the raw mail SES wrote (HeadObject) and copies it for each account (CopyObject: GetObject on the source,
  // PutObject on the copy, HeadObject first on the copy), then removes it. It parses nothing and writes no
  // attachment: the processing function does (inbound-queue.ts). ListBucket: an object not there is a 404, not a 403.
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: ['s3:GetObject', 's3:DeleteObject'],
      resources: [bucket.arnForObjects(`${RAW_MAIL_PREFIX}*`)],
    }),
  );
  fn.addToRolePolicy(
    new PolicyStatement({
      actions: ['s3:GetObject', 's3:PutObject'],
      resources: [bucket.arnForObjects(`${MAIL_COPIES_PREFIX}*`)],
    }),
  );
  suppressMailObjectPrefixes(bucket, fn, [RAW_MAIL_PREFIX, MAIL_COPIES_PREFIX]);
  fn.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }));
  return fn;
}

/**
 * One rule for the stage's domain: keep the raw mail, then hand it to the function. SES scans for spam and viruses
 * (the verdicts are in the event) and accepts mail only over TLS.
 */
function receiptRules(
  scope: Construct,
  props: MailReceivingProps,
  bucket: Bucket,
  fn: DeskpipeFunction,
): ReceiptRuleSet {
  return new ReceiptRuleSet(scope, 'RuleSet', {
    receiptRuleSetName: `${props.namePrefix}-inbound`,
    rules: [
      {
        receiptRuleName: `${props.namePrefix}-inbound-mail`,
        recipients: [props.mail.domain],
        scanEnabled: true,
        tlsPolicy: TlsPolicy.REQUIRE,
        actions: [
          new S3({ bucket, objectKeyPrefix: RAW_MAIL_PREFIX }),
          new Lambda({ function: fn, invocationType: LambdaInvocationType.EVENT }),
        ],
      },
    ],
  });
}
