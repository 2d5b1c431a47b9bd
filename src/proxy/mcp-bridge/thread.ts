/**
 * The MCP bridge's thread side: lazy's MCP route arrives on a proxy thread's listener, and is
 * checked, bounded and audited here before it is handed to the main thread (main.ts), where the
 * MCP server runs. A caller admitted lately skips the main thread's check for its body's reading.
 */
import type { Server } from "bun";
import type * as Log from "../../util/log";
import { auditRow, type Recorder } from "../audit";
import { dropBody, type Pass, readAtMost } from "../listen";
import type { Ask, McpAdmit, McpAnswer, McpWho } from "../thread";
import { MCP_NO_TOKEN, MCP_PATH } from "./names";

/** What the bridge needs of the proxy thread it runs on. */
export interface ThreadSide {
  /** Ask the main thread (an answer comes back for every ask). */
  ask<T>(a: Ask): Promise<T>;
  recorder: Pick<Recorder, "record" | "refused">;
  log: Log.Logger;
}

/** The largest MCP request body lazy reads (tool arguments are short). */
const MAX_MCP_BODY = 1024 * 1024;

/**
 * MCP callers (address and token) the main thread admitted in the last ADMITTED_MS: a turn's
 * calls come in bursts, and the hop costs ~0.1 ms a call. Only the body's reading (≤ 1 MiB)
 * rests on it; a token revoked meanwhile is refused by the main thread before any tool runs.
 */
const admitted = new Map<string, { who: McpWho; until: number }>();
const ADMITTED_MS = 5000;
const MAX_ADMITTED = 1024;

const rpcError = (status: number, code: number, message: string) =>
  Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers: { "cache-control": "no-store" } });

/**
 * lazy's MCP route, on the listener task containers reach: the request goes to the main thread
 * (the tools work on the store there) and is audited here like every other request, attributed
 * by its token. The caller is checked before a byte of the body is read — its token and the
 * address it comes from, asked of the main thread, which owns the tokens and their pins — and
 * the body is counted as it arrives and cut at MAX_MCP_BODY, whatever its framing (gate.ts). A
 * refused body is read on and thrown away while the answer goes out (gate.ts `discard`).
 */
export async function serveMcp(t: ThreadSide, req: Request, server: Server<undefined>, pass: Pass): Promise<Response> {
  const { ask, recorder, log } = t;
  const started = performance.now();
  const at = Date.now();
  const head = {
    at,
    taskId: null as string | null,
    taskRef: null as string | null,
    role: null as string | null,
    profile: null,
    credential: null,
    upstream: "lazy:mcp",
    method: req.method,
    path: MCP_PATH,
  };
  const refuse = (res: Response, note: string): Response => {
    recorder.record(auditRow(head, performance.now() - started, { status: res.status, note }));
    log.repeated(
      "warn",
      `${res.status} mcp ${note}`,
      `${res.status} ${req.method} ${MCP_PATH} ${note}${head.taskRef ? ` (task ${head.taskRef})` : ""}`,
    );
    return res;
  };
  const auth = req.headers.get("authorization");
  const token = auth && /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, "").trim() : "";
  const from = token ? (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, "") : "";
  // No token: refused here, so a flood of them costs the main thread nothing. A caller admitted
  // lately skips the hop (the main thread checks it again before any tool runs).
  const key = `${from} ${token}`;
  const recent = token ? admitted.get(key) : undefined;
  const fresh = recent !== undefined && recent.until > started;
  const admit: McpAdmit = fresh
    ? { ok: true, who: recent.who }
    : token
      ? await ask<McpAdmit>({ op: "mcp-admit", token, from })
      : { ok: false, ...MCP_NO_TOKEN };
  if (admit.ok && !fresh) {
    if (admitted.size >= MAX_ADMITTED) admitted.clear();
    admitted.set(key, { who: admit.who, until: started + ADMITTED_MS });
  } else if (!admit.ok) admitted.delete(key);
  if (!admit.ok) {
    // Unknown to lazy (no token, an unknown one, one off its pin): counted per minute, source and
    // reason, never a row, so a flood of them cannot push real rows out (audit/refusals.ts).
    dropBody(req, pass);
    recorder.refused({
      at,
      from: from || (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, ""),
      reason: admit.note,
      status: 401,
      taskId: null,
      taskRef: null,
      method: req.method,
      path: MCP_PATH,
    });
    log.repeated("warn", `401 mcp ${admit.note}`, `401 ${req.method} ${MCP_PATH} ${admit.note}`);
    return rpcError(401, -32001, admit.message);
  }
  head.taskId = admit.who.taskId;
  head.taskRef = admit.who.taskRef;
  head.role = admit.who.role;
  let body: string | null = null;
  if (req.method !== "GET" && req.method !== "HEAD" && req.method !== "DELETE") {
    const declared = req.headers.get("content-length");
    const over = () => rpcError(413, -32600, `An MCP request body is at most ${MAX_MCP_BODY} bytes.`);
    if (declared !== null && Number(declared) > MAX_MCP_BODY) {
      dropBody(req, pass);
      return refuse(over(), `MCP body of ${Number(declared)} bytes over ${MAX_MCP_BODY}`);
    }
    const read = await readAtMost(req, MAX_MCP_BODY, pass);
    if (read === "over") return refuse(over(), `chunked MCP body passed ${MAX_MCP_BODY} bytes`);
    if (typeof read === "string") return refuse(new Response(null, { status: 499 }), read);
    body = new TextDecoder().decode(read);
  }
  const a = await ask<McpAnswer>({ op: "mcp", method: req.method, headers: [...req.headers], body, from });
  head.taskId = a.who?.taskId ?? null;
  head.taskRef = a.who?.taskRef ?? null;
  head.role = a.who?.role ?? null;
  // A flood past a tool's bound is counted on its task once a minute (src/mcp/bounds.ts), not a row a call:
  // 6,000 refused finish calls were 900 KB of audit.
  if (!a.counted)
    recorder.record(
      auditRow(head, performance.now() - started, { status: a.status, bytesIn: body?.length ?? 0, bytesOut: a.body.length, note: a.note }),
    );
  return new Response(a.body, { status: a.status, headers: a.headers });
}
