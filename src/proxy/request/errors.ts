/**
 * The proxy's own answers, written once: refusals and credential failures are data (a status
 * and a body in the wire's error shape), and every one carries `x-should-retry: false` so the
 * SDKs do not hammer the proxy with a request that cannot succeed. Errors name the party:
 * the provider (with host, profile and credential label, and how far the request got:
 * upstream/failures.ts), or lazy itself ("lazy's proxy failed").
 */
import type { Wire } from "./surface";

export const NO_RETRY = { "x-should-retry": "false" };

export function errorResponse(
  wire: Wire | "cursor",
  status: number,
  type: string,
  message: string,
  extra: Record<string, string> = {},
): Response {
  const body =
    wire === "openai"
      ? { error: { message, type, param: null, code: type === "authentication_error" ? "invalid_api_key" : type } }
      : { type: "error", error: { type, message } };
  return Response.json(body, { status, headers: { ...NO_RETRY, ...extra } });
}

/**
 * A plain-http upstream the host's proxy would carry (upstream/way.ts): refused before the body
 * is read, naming the upstream, the proxy and the remedy. 403: lazy's rule, not a failure to retry.
 */
export function plainThroughProxy(wire: Wire | "cursor", sentence: string): Response {
  return errorResponse(wire, 403, "permission_error", sentence);
}
