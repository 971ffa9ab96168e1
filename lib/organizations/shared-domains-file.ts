/**
 * The package file listing free-mail and disposable domains (./shared-domains.ts reads it): its own module, with no
 * imports, so the route table can name it among the files of the routes that read it.
 */
export const SHARED_DOMAINS_FILE = 'email-providers/all.json';
