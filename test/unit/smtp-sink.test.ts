import net from 'node:net';
import { expect, it } from 'vitest';
import { startSmtpSink } from '#test/support/smtp-sink.ts';

// The relay the e-mail tests send to outlives a client killed mid-mail (email-restart SIGKILLs the service while
// it sends): the reset is kept on the sink, not thrown at the test process as an unhandled 'error'.
it('keeps a client reset mid-DATA as a connection error, not an unhandled one', async () => {
  const sink = await startSmtpSink();
  try {
    const socket = net.connect(sink.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('data', resolve));
    // Reset once the sink has taken the DATA command (its 354), with part of a message sent after it.
    let answers = '';
    const inData = new Promise((resolve) =>
      socket.on('data', (chunk: Buffer) => {
        answers += chunk.toString('utf8');
        if (/^354 /m.test(answers)) resolve(undefined);
      }),
    );
    socket.write(
      'EHLO killed.test\r\nMAIL FROM:<a@killed.test>\r\nRCPT TO:<b@relay.test>\r\nDATA\r\nSubject: cut\r\n\r\nhal',
    );
    await inData;
    socket.resetAndDestroy();
    await expect
      .poll(() => sink.connectionErrors.map((e) => (e as NodeJS.ErrnoException).code))
      .toEqual(['ECONNRESET']);
    expect(sink.mails).toEqual([]);
  } finally {
    await sink.stop();
  }
});
