import type { APIGatewayProxyResult } from 'aws-lambda';

export const JSON_CONTENT_TYPE = 'application/json';

/** Every response: a JSON body, its content type, and the request id. */
export function jsonResponse(
  statusCode: number,
  body: unknown,
  requestId: string,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return jsonTextResponse(statusCode, JSON.stringify(body), requestId, headers);
}

/** A response whose JSON text is already made (a kept answer replayed byte for byte). */
export function jsonTextResponse(
  statusCode: number,
  body: string,
  requestId: string,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return {
    statusCode,
    headers: { 'Content-Type': JSON_CONTENT_TYPE, 'X-Request-Id': requestId, ...headers },
    body,
  };
}

/**
 * An answer of bytes (raw mail, an attachment): base64 with isBase64Encoded, which the API's binary media types
 * (every type, infra/nested/api-stack.ts) make API Gateway decode, and the local gateway too.
 */
export function binaryResponse(
  statusCode: number,
  binary: { contentType: string; bytes: Buffer },
  requestId: string,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return {
    statusCode,
    headers: { 'Content-Type': binary.contentType, 'X-Request-Id': requestId, ...headers },
    body: binary.bytes.toString('base64'),
    isBase64Encoded: true,
  };
}

/** An answer that shows a secret: no cache, shared or the client's own, may keep a copy of it. */
export const SECRET_ANSWER_HEADERS = { 'Cache-Control': 'no-store' } as const;

/** The body of a 500: nothing about the cause, only the id to quote to support. */
export function serverErrorBody(requestId: string) {
  return { message: 'Server error.', request_id: requestId };
}

/** Client-supplied X-Request-Id is echoed only when it is a sane token; otherwise the gateway's id is used. */
export function pickRequestId(clientValue: string | undefined, gatewayId: string): string {
  return clientValue && /^[A-Za-z0-9._:-]{1,128}$/.test(clientValue) ? clientValue : gatewayId;
}
