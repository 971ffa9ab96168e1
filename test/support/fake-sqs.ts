import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SQSEvent } from 'aws-lambda';

/**
 * A small in-process stand-in for SQS at the AWS SDK's boundary: an HTTP server speaking the SDK's JSON protocol
 * for SendMessageBatch only, so the real SQSClient (its serialization, its MD5 checks) sends to it. No SQS emulator
 * is installed here (the tests' store is DynamoDB Local; SQS has no AWS-made local edition): this keeps what was sent,
 * each message with its group, and can refuse the next entries; the tests hand what it kept to the processing
 * function as the event source mapping would.
 */
export interface SentMessage {
  messageId: string;
  body: string;
  groupId: string | undefined;
}

export interface FakeSqs {
  /** The endpoint (AWS_ENDPOINT_URL_SQS) and a queue URL on it. */
  endpoint: string;
  queueUrl: string;
  /** Every message taken, in order. */
  sent: SentMessage[];
  /** Refuses the next `count` entries (each answered in `Failed`, as SQS does for one entry of a batch). */
  refuseNext(count: number): void;
  /** The messages taken and not yet handed over, as the event source mapping's event, and forgets them. */
  takeEvent(): SQSEvent;
  close(): Promise<void>;
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

export async function startFakeSqs(): Promise<FakeSqs> {
  const sent: SentMessage[] = [];
  let handedOver = 0;
  let refusing = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '');
      const input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as {
        Entries?: { Id: string; MessageBody: string; MessageGroupId?: string }[];
      };
      response.setHeader('content-type', 'application/x-amz-json-1.0');
      if (target !== 'AmazonSQS.SendMessageBatch') {
        response.statusCode = 400;
        response.end(JSON.stringify({ __type: 'com.amazonaws.sqs#UnsupportedOperation', message: target }));
        return;
      }
      const Successful = [];
      const Failed = [];
      for (const entry of input.Entries ?? []) {
        if (refusing > 0) {
          refusing -= 1;
          Failed.push({ Id: entry.Id, Code: 'InternalError', SenderFault: false, Message: 'refused' });
          continue;
        }
        const messageId = randomUUID();
        sent.push({ messageId, body: entry.MessageBody, groupId: entry.MessageGroupId });
        Successful.push({ Id: entry.Id, MessageId: messageId, MD5OfMessageBody: md5(entry.MessageBody) });
      }
      response.end(JSON.stringify({ Successful, Failed }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    queueUrl: `${endpoint}/000000000000/deskpipe-test-email-inbound`,
    sent,
    refuseNext(count) {
      refusing = count;
    },
    takeEvent() {
      const records = sent.slice(handedOver).map((m) => ({
        messageId: m.messageId,
        body: m.body,
        attributes: { MessageGroupId: m.groupId },
        eventSource: 'aws:sqs',
      }));
      handedOver = sent.length;
      return { Records: records } as unknown as SQSEvent;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
