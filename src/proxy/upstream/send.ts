/**
 * Sending one request upstream, the way way.ts decided for its origin (direct, through the
 * host's proxy, or refused: never a plain-http request through a proxy): through lazy's client
 * (client.ts) when it can carry it, else fetch (fetch.ts); once more on a fresh connection when
 * the upstream resets before answering and the body can be sent again. Only the wait for response headers is bounded: a flowing
 * stream is never cut. The agent disconnecting aborts the upstream call, which would otherwise
 * go on billing. A failure comes back classified (failures.ts), never thrown.
 */
import { request, toLines, UPSTREAM } from "./client";
import type { UpstreamResponse } from "./exchange";
import { classify, firstSentence, type NetFailure } from "./failures";
import { viaFetch } from "./fetch";
import { originOf, refusal, wayTo } from "./way";

export type Sent =
  | { ok: true; res: UpstreamResponse; retries: number }
  | { ok: false; failure: NetFailure | "aborted" | "other"; detail: string; retries: number };

export async function send(
  opts: { firstByteTimeoutMs: () => number },
  url: string,
  req: Request,
  headers: Headers | string,
  body: Uint8Array | ReadableStream<Uint8Array> | undefined,
): Promise<Sent> {
  const replayable = body === undefined || body instanceof Uint8Array;
  const way = wayTo(originOf(url));
  // The request path refuses such a target before it reads the body (request/route.ts,
  // fallback.ts, cursor.ts): this is the last line, so that nothing can send one.
  if (way.via === "refused") return { ok: false, failure: "other", detail: refusal(way, "the upstream"), retries: 0 };
  const viaClient = replayable && way.via === "direct" && way.client && !UPSTREAM.fetch;
  let retries = 0;
  for (;;) {
    try {
      if (viaClient) {
        const lines = typeof headers === "string" ? headers : toLines(headers);
        const res = await request({
          method: req.method,
          url,
          headers: lines,
          body: body as Uint8Array | undefined,
          signal: () => req.signal,
          timeoutMs: opts.firstByteTimeoutMs(),
          fresh: retries > 0,
        });
        return { ok: true, res, retries };
      }
      const proxy = way.via === "proxy" ? way.proxy : false;
      return { ok: true, res: await viaFetch(opts.firstByteTimeoutMs(), url, req, headers, body, retries > 0, proxy), retries };
    } catch (e) {
      const failure = req.signal.aborted ? "aborted" : classify(e);
      if (failure === "reset" && retries === 0 && replayable) {
        retries++;
        continue;
      }
      return { ok: false, failure, detail: firstSentence((e as Error)?.message ?? String(e)), retries };
    }
  }
}
