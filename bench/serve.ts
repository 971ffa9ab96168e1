import { ROOT } from '#infra/local/environment.ts';
import { LocalGateway } from '#infra/local/gateway.ts';

/** The local gateway alone, in its own process, so its memory can be measured under load. */
const port = Number(process.env.PORT ?? 0);
const gateway = new LocalGateway({ authCacheTtlSeconds: 30, root: ROOT });
await gateway.warm();
const server = await gateway.listen(port);
const address = server.address();
process.stdout.write(`ready ${typeof address === 'object' && address ? address.port : port}\n`);
