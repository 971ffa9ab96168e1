import { afterEach, describe, expect, it } from 'vitest';
import { attachmentHostsOf, attachmentUrlAllowed } from '#lib/imports/attachment-hosts.ts';
import { closeSourceConnections, SourceHostRefused, SourceHttp, SourceTooLarge } from '#lib/imports/http.ts';
import { useManualClock } from '#test/support/clock.ts';
import { onClock, startVendorServer, type VendorServer } from '#test/support/vendors/server.ts';

/**
 * Where imported attachments may be fetched from (decisions.md, "Imports": the hosts the vendor documents, under
 * the operator's override its host alone), and SourceHttp.getBytes keeping to them through redirects, sending the
 * credentials to the source's origin only, and refusing what passes its limit.
 */
const clock = useManualClock();
let server: VendorServer | undefined;
afterEach(async () => {
  closeSourceConnections();
  await server?.close();
});

const allowed = (url: string, vendor: 'zendesk' | 'freshdesk', origin: string) =>
  attachmentUrlAllowed(new URL(url), origin, attachmentHostsOf(vendor, {}));

describe('attachment hosts', () => {
  it("are the source's origin and the vendor's documented hosts, over https; none but the origin under an override", () => {
    const zd = 'https://acme.zendesk.com';
    expect(allowed('https://acme.zendesk.com/attachments/token/t/?name=a.png', 'zendesk', zd)).toBe(true);
    expect(allowed('https://p13.zdusercontent.com/attachment/1/x', 'zendesk', zd)).toBe(true);
    expect(allowed('http://p13.zdusercontent.com/attachment/1/x', 'zendesk', zd)).toBe(false);
    expect(allowed('https://zdusercontent.com.evil.test/x', 'zendesk', zd)).toBe(false);
    expect(allowed('https://other.zendesk.com/attachments/token/t/', 'zendesk', zd)).toBe(false);
    const fd = 'https://acme.freshdesk.com';
    expect(
      allowed(
        'https://s3.amazonaws.com/cdn.freshdesk.com/data/helpdesk/attachments/1/a.pdf',
        'freshdesk',
        fd,
      ),
    ).toBe(true);
    expect(allowed('https://s3.amazonaws.com/other-bucket/a.pdf', 'freshdesk', fd)).toBe(false);
    expect(attachmentHostsOf('zendesk', { IMPORT_ZENDESK_URL: 'http://127.0.0.1:1' })).toEqual([]);
  });

  it('getBytes follows a redirect on allowed hosts only, with the credentials on the origin, refusing past its limit', async () => {
    server = await startVendorServer((url) => {
      if (url.pathname === '/moved') return { status: 302, headers: { location: '/file' } };
      if (url.pathname === '/away') return { status: 302, headers: { location: 'https://evil.test/file' } };
      return { status: 200, body: Buffer.from('bytes!') };
    });
    const http = new SourceHttp({
      baseUrl: server.url,
      authorization: 'Basic c2VjcmV0',
      publishedPerMinute: 600,
    });
    expect((await onClock(clock(), http.getBytes(`${server.url}/moved`, 100))).toString()).toBe('bytes!');
    expect(server.requests.map((r) => [r.path, r.authorization])).toEqual([
      ['/moved', 'Basic c2VjcmV0'],
      ['/file', 'Basic c2VjcmV0'],
    ]);
    await expect(onClock(clock(), http.getBytes(`${server.url}/away`, 100))).rejects.toBeInstanceOf(
      SourceHostRefused,
    );
    await expect(
      onClock(clock(), http.getBytes('https://p1.zdusercontent.com/x', 100)),
    ).rejects.toBeInstanceOf(SourceHostRefused);
    await expect(onClock(clock(), http.getBytes(`${server.url}/file`, 5))).rejects.toBeInstanceOf(
      SourceTooLarge,
    );
    expect(server.requests).toHaveLength(4);
  });
});
