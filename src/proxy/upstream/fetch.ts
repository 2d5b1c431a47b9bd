/**
 * fetch, for what lazy's own client (client.ts) does not carry: a request body that is itself a
 * stream (the Cursor route), an https:// upstream through the host's proxy, and everything when
 * `LAZY_UPSTREAM=fetch` says so. Its answer takes the client's shape (UpstreamResponse), and
 * its wait for headers the client's deadline.
 */
import type { UpstreamResponse } from "./exchange";
import { NetError } from "./failures";
import { HOP_BY_HOP } from "./http1";

/**
 * Send through fetch; `fresh` asks for a new connection (the retry after a reset); `proxy` is the
 * host's proxy way.ts chose for the origin, or false: direct, whatever the environment says.
 */
export async function viaFetch(
  timeoutMs: number,
  url: string,
  req: Request,
  headers: Headers | string,
  body: Uint8Array | ReadableStream<Uint8Array> | undefined,
  fresh: boolean,
  proxy: string | false,
): Promise<UpstreamResponse> {
  // Bun aborts a request whose connection got pipelined bytes or a FIN: it is never answered, so
  // it must not go upstream (and be billed) either.
  if (req.signal.aborted) throw Object.assign(new Error("The operation was aborted"), { name: "AbortError" });
  const firstByte = new AbortController();
  const onAbort = () => firstByte.abort();
  req.signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => firstByte.abort(new NetError("ETIMEDOUT", "no response headers in time")), timeoutMs);
  try {
    const res = await fetch(url, {
      method: req.method,
      headers: typeof headers === "string" ? toHeaders(headers) : headers,
      body: body as BodyInit | undefined,
      redirect: "manual",
      signal: firstByte.signal,
      // Bun's own: keep the body as sent (no decompression under a content-encoding header),
      // no 5-minute idle cut, and a fresh connection on the retry.
      decompress: false,
      timeout: false,
      keepalive: !fresh,
      duplex: "half",
      proxy,
    } as RequestInit);
    return fromFetch(res, req.method);
  } catch (e) {
    if (firstByte.signal.aborted && !req.signal.aborted) throw new NetError("ETIMEDOUT", "no response headers in time");
    throw e;
  } finally {
    clearTimeout(timer);
    req.signal.removeEventListener("abort", onAbort);
  }
}

/** Header lines as a Headers object, for fetch. */
function toHeaders(lines: string): Headers {
  const h = new Headers();
  for (const line of lines.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) h.append(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return h;
}

/** fetch's Response in the client's shape. */
function fromFetch(res: Response, method: string): UpstreamResponse {
  const headers = new Headers();
  for (const [k, v] of res.headers) if (!HOP_BY_HOP.has(k)) headers.append(k, v);
  const length = Number(res.headers.get("content-length") ?? NaN);
  return {
    status: res.status,
    statusText: res.statusText,
    ok: res.ok,
    headers,
    length: Number.isFinite(length) && !res.headers.has("transfer-encoding") ? length : undefined,
    hasBody: res.body !== null && method !== "HEAD",
    bytes: () => res.bytes(),
    stream: () => res.body!,
    cancel: () => void res.body?.cancel().catch(() => {}),
  };
}
