/**
 * One request through the broker, after the TLS the container opened to a brokered host ended
 * at lazy's terminator (terminator.ts): the `Host` it names must be the CONNECT's; git's smart
 * HTTP keeps to the configured repositories and a task's pushes to its own branch (git.ts,
 * decided from the receive-pack commands before a pack byte is forwarded); the task's own
 * placeholder for this service is swapped for the real secret and any other placeholder of
 * lazy's refused (swap.ts); then the request goes to the real host over a new TLS connection
 * that verifies the host's certificate (the host's trust store and NODE_EXTRA_CA_CERTS; through
 * the host's proxy when it has one), redirects handed back as they are (the client follows them,
 * and a secret is only ever swapped in towards a brokered host). The answer is checked for the
 * secret on its way back (guard.ts). Every request is one audit row: service, method, path
 * without its query, status, bytes, task.
 */
import { HOP_BY_HOP } from "../proxy";
import { scopeGit } from "./git";
import { carries, guarded } from "./guard";
import { carriesMine, foreignIn, type Known, swapIn } from "./swap";
import type { Tunnel } from "./terminator";
import type { Service } from "./types";

export interface Caller {
  taskId: string;
  taskRef: string;
}

export interface Row {
  at: number;
  task: Caller | null;
  service: string;
  host: string;
  port: number;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  bytesIn: number;
  bytesOut: number;
  note: string | null;
}

export interface ForwardDeps {
  service(host: string, port: number): Service | undefined;
  /** The task whose turn runs in the container at this address, if any. */
  caller(src: string): Caller | null;
  /** The task's placeholder for the service (null: none given). */
  placeholder(taskId: string, service: string): string | null;
  /** One of lazy's placeholders or tokens in a text, and whose it is. */
  find(text: string): Known | undefined;
  /** The real secret (sources.ts); throws a worded error. */
  secret(service: Service, caller: Caller): Promise<string>;
  /** The forms of the secret to look for in an answer (egress/canary.ts). */
  forms(secret: string): string[];
  /** The secret last swapped in for this task and service, if any: an answer to a request without it is checked too. */
  lastSecret(service: Service, caller: Caller): string | null;
  /** The project's origin repository ("owner/name"), for a service with no repos. */
  originRepo(): string | null;
  /** Where the host is dialed (an address from LAZY_RESOLVE in tests), or null: by name. */
  address(host: string): string | null;
  /** The host's proxy for an https origin, or false. */
  proxy(host: string, port: number): string | false;
  record(row: Row): void;
  /** A source failed, a secret came back in an answer: said in the task's events and lazy watch. */
  tell(caller: Caller | null, service: string, what: string): void;
}

const plain = (status: number, text: string, extra: Record<string, string> = {}) =>
  new Response(`lazy's broker: ${text}\n`, { status, headers: { "content-type": "text/plain; charset=utf-8", ...extra } });

/** Count the bytes of a stream as they pass. */
function counted(body: ReadableStream<Uint8Array>, add: (n: number) => void): ReadableStream<Uint8Array> {
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        add(chunk.byteLength);
        ctl.enqueue(chunk);
      },
    }),
  );
}

export async function forward(d: ForwardDeps, req: Request, t: Tunnel): Promise<Response> {
  const at = Date.now();
  const url = new URL(req.url);
  const svc = d.service(t.host, t.port);
  const who = d.caller(t.src);
  const row = {
    at,
    task: who,
    service: svc?.name ?? "-",
    host: t.host,
    port: t.port,
    method: req.method,
    path: url.pathname.slice(0, 2048),
    bytesIn: 0,
    bytesOut: 0,
  };
  // Once a request: at the answer's end, when it is cut, or when the client goes away mid-answer.
  let recorded = false;
  const done = (status: number, note: string | null) => {
    if (recorded) return;
    recorded = true;
    d.record({ ...row, status, durationMs: Date.now() - at, note });
  };
  const refuse = (status: number, why: string, extra?: Record<string, string>) => {
    done(status, `broker: ${why}`);
    return plain(status, why, extra);
  };
  if (!svc) return refuse(421, `${t.host}:${t.port} is not a brokered service's host`);
  // SNI was checked against the CONNECT by the egress proxy; Host must name the same host.
  const host = (req.headers.get("host") ?? "").toLowerCase();
  const want = t.port === 443 ? [t.host, `${t.host}:443`] : [`${t.host}:${t.port}`];
  if (!want.includes(host))
    return refuse(
      421,
      `the request names Host ${JSON.stringify(host.slice(0, 200))} inside a tunnel to ${t.host}:${t.port}: a request goes to the host its tunnel was opened to`,
    );

  const headers = new Headers();
  for (const [k, v] of req.headers) if (!HOP_BY_HOP.has(k)) headers.append(k, v);
  const mine = who ? d.placeholder(who.taskId, svc.name) : null;
  const foreign = foreignIn(headers, mine, d.find);
  if (foreign)
    return refuse(
      403,
      `the request carries ${foreign.who}, which is not ${who ? `task ${who.taskRef}'s placeholder for ${svc.name}` : "for this caller"}: it is never swapped or sent`,
    );

  // git over HTTPS: the repositories, and a task's pushes to its own branch only (git.ts).
  let body: ReadableStream<Uint8Array> | null = req.body;
  const git = await scopeGit(
    { method: req.method, path: url.pathname, query: url.searchParams, headers: req.headers, body },
    { service: svc, originRepo: d.originRepo(), taskRef: who?.taskRef ?? "" },
  );
  if (git && "refuse" in git) {
    const r = git.refuse;
    const text = r.headers["content-type"]?.startsWith("text/plain")
      ? new TextDecoder().decode(r.body).trim().slice(0, 300)
      : "push refused";
    done(r.status, `broker: ${text}`);
    return new Response(r.body, { status: r.status, headers: r.headers });
  }
  if (git) body = git.forward;

  let secret: string | null = null;
  if (mine && who && carriesMine(headers, mine)) {
    try {
      secret = await d.secret(svc, who);
    } catch (e) {
      const why = (e as Error).message;
      d.tell(who, svc.name, why);
      return refuse(502, why);
    }
  }
  const sent = secret && mine ? swapIn(headers, mine, secret) : headers;
  const address = d.address(t.host);
  const target = `https://${address ?? t.host}:${t.port}${url.pathname}${url.search}`;
  let res: Response;
  try {
    res = await fetch(target, {
      method: req.method,
      headers: sent,
      body: body ? counted(body, (n) => (row.bytesOut += n)) : undefined,
      redirect: "manual",
      decompress: false,
      timeout: false,
      duplex: "half",
      proxy: d.proxy(t.host, t.port) || undefined,
      tls: address ? { serverName: t.host } : undefined,
    } as RequestInit);
  } catch (e) {
    const why = (e as Error).message.replaceAll(secret ?? "\u0000", "[secret]");
    return refuse(502, `${t.host}:${t.port} could not be reached or did not verify (${why})`);
  }
  // A host may hand back what an earlier, swapped request stored: every answer to the task is checked.
  const guard = secret ?? (who ? d.lastSecret(svc, who) : null);
  const forms = guard ? d.forms(guard) : [];
  const back = new Headers();
  for (const [k, v] of res.headers) if (!HOP_BY_HOP.has(k) || k === "content-length") back.append(k, v);
  if (forms.length && carries([...back].map(([k, v]) => `${k}: ${v}`).join("\n"), forms)) {
    await res.body?.cancel().catch(() => {});
    d.tell(who, svc.name, `${t.host} answered ${req.method} ${row.path} with the real token in its headers: lazy cut the answer`);
    return refuse(502, "the answer carried the service's real token in its headers: lazy cut it");
  }
  if (!res.body) {
    done(res.status, secret ? `broker: ${svc.name}` : null);
    return new Response(null, { status: res.status, headers: back });
  }
  let cut = false;
  const guardedBody = forms.length
    ? guarded(res.body, forms, () => {
        cut = true;
        done(res.status, "broker: answer cut (it carried the token)");
        d.tell(who, svc.name, `${t.host} answered ${req.method} ${row.path} with the real token in its body: lazy cut the answer`);
      })
    : res.body;
  const out = counted(guardedBody, (n) => (row.bytesIn += n)).pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      flush: () => done(res.status, cut ? "broker: answer cut (it carried the token)" : secret ? `broker: ${svc.name}` : null),
    }),
  );
  req.signal.addEventListener("abort", () => done(res.status, "broker: the client left before the answer's end"), { once: true });
  return new Response(out, { status: res.status, statusText: res.statusText, headers: back });
}
