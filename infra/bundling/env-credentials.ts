/**
 * Stands in for @aws-sdk/credential-provider-node in Lambda bundles (infra/constructs/deskpipe-function.ts):
 * a Lambda function's credentials are always in its environment, so the rest of the SDK's default chain (INI
 * and SSO files, web identity, container and instance metadata, with the STS and SSO clients they bring) is
 * dead weight: about 70 KB of each bundle, measured by `npm run bench`'s cold-start section.
 */
export { fromEnv as defaultProvider } from '@aws-sdk/credential-provider-env';
