import { etagOf } from '#lib/versioned-update.ts';
import type { HttpResult } from './request.ts';

/** A resource and its version, as a route answers it. */
export interface VersionedData<T> {
  data: T;
  version: number;
}

/** `{"data": …}` and the resource's ETag (without one: an answer about a resource that is gone). */
export const versionedAnswer =
  <T>(statusCode: 200 | 201, options: { etag?: boolean } = {}) =>
  ({ data, version }: VersionedData<T>): HttpResult => ({
    statusCode,
    body: { data },
    ...(options.etag === false ? {} : { headers: { ETag: etagOf(version) } }),
  });
