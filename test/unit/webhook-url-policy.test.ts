import { afterEach, describe, expect, it, vi } from 'vitest';
import { isLocalStage } from '#lib/config/stage.ts';
import {
  checkWebhookUrl,
  isAllowedAddress,
  type ResolveAll,
  resolveSafeAddress,
  resolveWebhookTarget,
  URL_MESSAGES,
} from '#lib/webhooks/url-policy.ts';

/**
 * The URL policy of webhook endpoints (decisions.md, "Webhooks") as the deployed stages apply it (allowLocal
 * false): no name is really resolved here; each test gives the resolver's answer.
 */
const answers =
  (table: Record<string, string[]>): ResolveAll =>
  async (host) => {
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

const resolve = answers({
  'hooks.example.com': ['93.184.215.14'],
  'v6.example.com': ['2606:4700:4700::1111'],
  'inside.example.com': ['10.1.2.3'],
  'metadata.example.com': ['169.254.169.254'],
  'mixed.example.com': ['93.184.215.14', '127.0.0.1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  localhost: ['127.0.0.1', '::1'],
  'empty.example.com': [],
});

const deployed = { allowLocal: false, resolve };
const check = (url: string) => checkWebhookUrl(url, deployed);

describe('webhook URL policy, deployed (allowLocal false)', () => {
  it('takes https URLs of public hosts, by name or address, with a port and a path', async () => {
    for (const url of [
      'https://hooks.example.com/deskpipe',
      'https://hooks.example.com:8443/in?src=deskpipe',
      'https://v6.example.com/',
      'https://93.184.215.14/hook',
      'https://[2606:4700:4700::1111]/hook',
    ]) {
      expect(await check(url), url).toBe('ok');
    }
  });

  it('refuses anything but https, and what is not a URL', async () => {
    expect(await check('http://hooks.example.com/deskpipe')).toBe(URL_MESSAGES.https);
    expect(await check('ftp://hooks.example.com/')).toBe(URL_MESSAGES.https);
    expect(await check('hooks.example.com/deskpipe')).toBe(URL_MESSAGES.invalid);
    expect(await check('https://')).toBe(URL_MESSAGES.invalid);
    expect(await check(`https://hooks.example.com/${'a'.repeat(2048)}`)).toBe(URL_MESSAGES.invalid);
  });

  it('refuses credentials in the URL (they would be shown by every GET)', async () => {
    expect(await check('https://user:pass@hooks.example.com/')).toBe(URL_MESSAGES.credentials);
  });

  it.each([
    ['loopback', 'https://127.0.0.1/'],
    ['loopback, anywhere in 127/8', 'https://127.255.0.9/'],
    ['unspecified', 'https://0.0.0.0/'],
    ['private 10/8', 'https://10.0.0.1/'],
    ['private 172.16/12', 'https://172.31.255.1/'],
    ['private 192.168/16', 'https://192.168.1.1/'],
    ['link-local', 'https://169.254.10.10/'],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data/'],
    ['carrier-grade NAT', 'https://100.64.0.1/'],
    ['multicast', 'https://224.0.0.1/'],
    ['broadcast', 'https://255.255.255.255/'],
  ])('refuses an IPv4 address: %s (%s)', async (_what, url) => {
    expect(await check(url)).toBe(URL_MESSAGES.address);
  });

  it.each([
    ['decimal', 'https://2130706433/'],
    ['hexadecimal', 'https://0x7f000001/'],
    ['hexadecimal parts', 'https://0x7f.1/'],
    ['octal', 'https://0177.0.0.1/'],
    ['short form', 'https://127.1/'],
    ['zero', 'https://0/'],
    ['percent-encoded', 'https://%31%32%37.0.0.1/'],
    ['decimal metadata', 'https://2852039166/'],
    ['private in hexadecimal', 'https://0xa000001/'],
  ])('refuses an odd spelling of an inside IPv4 address: %s (%s)', async (_what, url) => {
    expect(await check(url)).toBe(URL_MESSAGES.address);
  });

  it.each([
    ['loopback', 'https://[::1]/'],
    ['unspecified', 'https://[::]/'],
    ['unique local', 'https://[fc00::1]/'],
    ['unique local fd', 'https://[fd12:3456::1]/'],
    ['EC2 metadata over IPv6', 'https://[fd00:ec2::254]/'],
    ['link-local', 'https://[fe80::1]/'],
    ['multicast', 'https://[ff02::1]/'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped loopback, hex', 'https://[::ffff:7f00:1]/'],
    ['IPv4-mapped metadata', 'https://[::ffff:169.254.169.254]/'],
    ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]/'],
    ['IPv4-compatible loopback', 'https://[::127.0.0.1]/'],
    ['NAT64 of loopback', 'https://[64:ff9b::7f00:1]/'],
    ['6to4 of private', 'https://[2002:a00:1::]/'],
    ['Teredo', 'https://[2001:0:4136:e378::1]/'],
    ['documentation', 'https://[2001:db8::1]/'],
  ])('refuses an IPv6 address: %s (%s)', async (_what, url) => {
    expect(await check(url)).toBe(URL_MESSAGES.address);
  });

  it('refuses a name that resolves to an inside address, also when only one of its addresses is', async () => {
    expect(await check('https://localhost/')).toBe(URL_MESSAGES.address);
    expect(await check('https://inside.example.com/')).toBe(URL_MESSAGES.address);
    expect(await check('https://metadata.example.com/')).toBe(URL_MESSAGES.address);
    expect(await check('https://mixed.example.com/')).toBe(URL_MESSAGES.address);
    expect(await check('https://mapped.example.com/')).toBe(URL_MESSAGES.address);
  });

  it('refuses a name that does not resolve, or resolves to nothing', async () => {
    expect(await check('https://nowhere.example.com/')).toBe(URL_MESSAGES.unresolved);
    expect(await check('https://empty.example.com/')).toBe(URL_MESSAGES.unresolved);
  });

  it('refuses the local forms too: loopback is never a receiver of a deployed stage', async () => {
    expect(await check('http://127.0.0.1:4000/hook')).toBe(URL_MESSAGES.https);
    expect(await check('http://localhost:4000/hook')).toBe(URL_MESSAGES.https);
  });
});

describe('webhook URL policy, local stage (allowLocal true)', () => {
  const local = { allowLocal: true, resolve };

  it('takes http://127.0.0.1:<port> and http://localhost:<port>, which connect to 127.0.0.1', async () => {
    for (const url of ['http://127.0.0.1:4000/hook', 'http://localhost:4000/hook', 'http://localhost/']) {
      expect(await resolveWebhookTarget(url, local), url).toMatchObject({ address: '127.0.0.1', family: 4 });
    }
  });

  it('refuses every other inside form: https to loopback, IPv6 loopback, other http hosts', async () => {
    expect(await checkWebhookUrl('https://localhost:4000/', local)).toBe(URL_MESSAGES.address);
    expect(await checkWebhookUrl('https://127.0.0.1:4000/', local)).toBe(URL_MESSAGES.address);
    expect(await checkWebhookUrl('http://[::1]:4000/', local)).toBe(URL_MESSAGES.httpsOrLocal);
    expect(await checkWebhookUrl('http://10.0.0.1:4000/', local)).toBe(URL_MESSAGES.httpsOrLocal);
    expect(await checkWebhookUrl('http://2130706433:4000/', local)).toBe('ok'); // it is 127.0.0.1, as written
    expect(await checkWebhookUrl('http://hooks.example.com/', local)).toBe(URL_MESSAGES.httpsOrLocal);
  });
});

describe('the address a delivery connects to', () => {
  it('is the checked address: the literal, or the first of the resolved ones', async () => {
    expect(await resolveSafeAddress('93.184.215.14', { resolve })).toEqual({
      address: '93.184.215.14',
      family: 4,
    });
    expect(await resolveSafeAddress('[2606:4700:4700::1111]', { resolve })).toEqual({
      address: '2606:4700:4700::1111',
      family: 6,
    });
    expect(await resolveSafeAddress('hooks.example.com', { resolve })).toEqual({
      address: '93.184.215.14',
      family: 4,
    });
    const target = await resolveWebhookTarget('https://v6.example.com/in', deployed);
    expect(target).toMatchObject({ address: '2606:4700:4700::1111', family: 6 });
  });

  it('is refused when the name now resolves inside (DNS rebinding between registration and delivery)', async () => {
    let calls = 0;
    const rebinding: ResolveAll = async () => [
      { address: calls++ === 0 ? '93.184.215.14' : '127.0.0.1', family: 4 },
    ];
    expect(
      await checkWebhookUrl('https://rebind.example.com/', { allowLocal: false, resolve: rebinding }),
    ).toBe('ok');
    await expect(resolveSafeAddress('rebind.example.com', { resolve: rebinding })).rejects.toThrow(
      URL_MESSAGES.address,
    );
  });

  it('isAllowedAddress: literals only, zones ignored, names never', () => {
    expect(isAllowedAddress('8.8.8.8')).toBe(true);
    expect(isAllowedAddress('2606:4700:4700::1111')).toBe(true);
    expect(isAllowedAddress('fe80::1%eth0')).toBe(false);
    expect(isAllowedAddress('::ffff:8.8.8.8')).toBe(false); // mapped forms are not global unicast
    expect(isAllowedAddress('example.com')).toBe(false);
  });
});

describe('the local stage', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('is DESKPIPE_STAGE=local, which the local gateway sets, and never inside a Lambda runtime', () => {
    vi.stubEnv('DESKPIPE_STAGE', 'local');
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', '');
    expect(isLocalStage()).toBe(true);
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'deskpipe-prod-createWebhook');
    expect(isLocalStage()).toBe(false);
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', '');
    vi.stubEnv('DESKPIPE_STAGE', 'prod');
    expect(isLocalStage()).toBe(false);
  });
});
