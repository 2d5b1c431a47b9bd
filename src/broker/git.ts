/**
 * Git smart HTTP through the broker: which repository a request is for, whether the service may
 * reach it, and, for a push, which refs it would move, read from the receive-pack request's
 * command list before a single pack byte goes on to the forge. A task holds only a placeholder,
 * but the broker turns it into a token that can push anywhere the token can: so the broker, not
 * the forge, is where "only refs/heads/lazy/<task>…" holds. A refusal is worded as git's own
 * report-status (`! [remote rejected] main -> main (…)`), so the agent and the person read the
 * rule in git's output, not in lazy's log.
 */
import { concat } from "./der";
import type { Service } from "./types";

export type GitService = "upload-pack" | "receive-pack";
export interface GitRequest {
  /** "owner/name" (GitLab: "group/sub/name"), `.git` stripped, lower-cased. */
  repo: string;
  service: GitService;
  /** refs: `GET …/info/refs?service=git-…` (the advertisement); rpc: `POST …/git-…`. */
  phase: "refs" | "rpc";
}
export interface Command {
  old: string;
  new: string;
  ref: string;
}
export interface Refusal {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array<ArrayBuffer>;
}

/** At most this many bytes of pkt-lines before the pack (commands, shallow lines, push options). */
export const MAX_COMMAND_BYTES = 1 << 20;
/** At most this many ref updates in one push. */
export const MAX_REFS = 1000;
/** git's own LARGE_PACKET_MAX: no pkt-line is longer, header included. */
const MAX_PKT = 65520;

const SEGMENT = /^[A-Za-z0-9_.-]+$/;
const TAIL = /^(.*)\/(info\/refs|git-upload-pack|git-receive-pack)$/;

/**
 * The git smart-HTTP request a path names, `{ bad }` for a git request lazy will not pass
 * (a reason a person can act on), or null when the path is not git's (an API call: the
 * caller's other rules apply). Parsed strictly: what this function accepts, every forge parses
 * the same way (no `..`, no percent-encoding, no empty segment), so the repository checked here is
 * the one the forge serves.
 */
export function gitRequest(method: string, path: string, query: URLSearchParams): GitRequest | { bad: string } | null {
  const m = TAIL.exec(path);
  const gitish = m !== null || /\.git(\/|$)/i.test(path);
  if (!gitish) return null;
  if (!m)
    return {
      bad: `lazy passes only git's smart HTTP protocol (…/info/refs, …/git-upload-pack, …/git-receive-pack), not ${method} ${path}`,
    };
  const [, prefix, tail] = m as unknown as [string, string, string];
  if (path.includes("%")) return { bad: `lazy refuses a percent-encoded git path (${path}): name the repository plainly` };
  const parts = prefix.split("/").slice(1);
  if (prefix[0] !== "/" || parts.length < 2 || parts.some((p) => p === "" || p === "." || p === ".." || !SEGMENT.test(p)))
    return { bad: `lazy refuses the git path ${path}: expected /owner/name(.git)/… with letters, digits, '-', '_', '.' in each part` };
  const last = parts[parts.length - 1]!.replace(/\.git$/i, "");
  if (last === "" || last === "." || last === "..") return { bad: `lazy refuses the git path ${path}: the repository has no name` };
  const repo = [...parts.slice(0, -1), last].join("/").toLowerCase();
  if (tail === "info/refs") {
    if (method !== "GET") return { bad: `lazy passes only GET to ${path}, not ${method}` };
    const services = query.getAll("service");
    const s = services.length === 1 ? /^git-(upload-pack|receive-pack)$/.exec(services[0]!) : null;
    if (!s) return { bad: "lazy passes only git's smart HTTP protocol: info/refs needs ?service=git-upload-pack or git-receive-pack" };
    return { repo, service: s[1] as GitService, phase: "refs" };
  }
  if (method !== "POST") return { bad: `lazy passes only POST to ${path}, not ${method}` };
  return { repo, service: tail === "git-upload-pack" ? "upload-pack" : "receive-pack", phase: "rpc" };
}

/** "owner/name" the way gitRequest names it: `.git` stripped, lower-cased. */
export const repoKey = (repo: string): string =>
  repo
    .trim()
    .replace(/\.git$/i, "")
    .replace(/^\/+|\/+$/g, "")
    .toLowerCase();

/** The repository a remote URL names on its host (https://host/owner/name.git, git@host:owner/name.git). */
export function repoOfUrl(url: string): { host: string; repo: string } | null {
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(url);
  if (scp && !url.includes("://")) return { host: scp[1]!.toLowerCase(), repo: repoKey(scp[2]!) };
  const u = URL.parse(url);
  if (!u) return null;
  const repo = repoKey(u.pathname);
  return repo.includes("/") ? { host: u.host.toLowerCase(), repo } : null;
}

/**
 * Whether the service may fetch from or push to the repository: one of its `repos`, or, when
 * it names none, only the project's own origin (null: the project has none on this host, so none).
 */
export function repoAllowed(repo: string, service: Service, originRepo: string | null): boolean {
  const key = repoKey(repo);
  if (service.repos.length === 0) return originRepo !== null && key === repoKey(originRepo);
  return service.repos.some((r) => repoKey(r) === key);
}

/** The refusal's words for a repository outside the service's `repos`. */
export function repoRefusal(repo: string, service: Service, originRepo: string | null): string {
  const allowed = service.repos.length
    ? service.repos.join(", ")
    : originRepo
      ? `${originRepo} (the project's origin)`
      : "none (the project has no origin here)";
  return `lazy: service ${service.name} reaches only these repositories: ${allowed}; not ${repo}. Add it to repos of [[service]] ${service.name} in lazy.toml (then lazy trust) to allow it.`;
}

const TASK_REF = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const REF_PART = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/**
 * Whether a push may move the ref: only refs/heads/lazy/<taskRef> and refs/heads/lazy/<taskRef>/….
 * Deleting such a ref is allowed too: it is the task's own namespace, a delete loses nothing a
 * force-push of the same ref could not, and a task may need to clean up a branch it made.
 * Each part is held to a narrow spelling (no `..`, no leading `.`, no `.lock`, no `@{`), so
 * the ref checked here is the ref the forge writes.
 */
export function allowedRef(ref: string, taskRef: string): boolean {
  if (!TASK_REF.test(taskRef)) return false;
  const base = `refs/heads/lazy/${taskRef}`;
  if (ref === base) return true;
  if (!ref.startsWith(`${base}/`)) return false;
  return ref
    .slice(base.length + 1)
    .split("/")
    .every((p) => REF_PART.test(p) && !p.includes("..") && !p.endsWith(".lock") && !p.endsWith("."));
}

/** The rule, worded for git's ` ! [remote rejected] ref -> ref (…)` line. */
export const pushRule = (taskRef: string): string =>
  `lazy: this task may push only refs/heads/lazy/${taskRef} and refs/heads/lazy/${taskRef}/*; lazy accept brings work to your branches`;

export type ReadResult =
  | { commands: Command[]; caps: string[]; consumed: Uint8Array[]; rest: ReadableStream<Uint8Array> }
  | { bad: string };

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const dec = new TextDecoder();

/**
 * Reads a receive-pack request up to its pack: optional `shallow <oid>` lines, the commands
 * (`<old> <new> <ref>`, capabilities after a NUL), the flush, and the push options when the
 * `push-options` capability was asked for. Parsed as receive-pack parses it (a trailing LF
 * chomped, the ref ending at the first NUL, capabilities read from any line that has one).
 * Bounded before it reads on: a pkt-line's declared length is checked against MAX_COMMAND_BYTES
 * and git's own maximum before its payload is awaited, and the refs are counted as they come.
 * `consumed` holds every chunk read (whole: it may end inside the pack), so the caller forwards
 * `consumed` then `rest` and the forge gets the body byte for byte.
 *
 * The body is never gzip: git compresses only fetch requests (remote-curl sets gzip_request for
 * upload-pack alone), so the caller refuses a receive-pack with a Content-Encoding (scopeGit)
 * rather than read compressed bytes the forge would inflate differently.
 */
export async function readCommands(body: ReadableStream<Uint8Array>): Promise<ReadResult> {
  const reader = body.getReader();
  const consumed: Uint8Array[] = [];
  // Unread bytes as the chunks they came in: each pkt-line is copied out once, so a client
  // that sends one byte at a time costs linear work, not a re-copy of everything per chunk.
  let pending: Uint8Array[] = [];
  let first = 0; // pending[first] is the oldest unread chunk
  let have = 0;
  let used = 0; // bytes of pkt-lines parsed so far
  const fill = async (n: number): Promise<boolean> => {
    while (have < n) {
      const { done, value } = await reader.read();
      if (done) return false;
      if (!value?.length) continue;
      consumed.push(value);
      pending.push(value);
      have += value.length;
    }
    return true;
  };
  /** The next n bytes (fill(n) first), removed from pending. */
  const take = (n: number): Uint8Array => {
    const out = new Uint8Array(n);
    for (let at = 0; at < n; ) {
      const c = pending[first]!;
      const k = Math.min(c.length, n - at);
      out.set(c.subarray(0, k), at);
      at += k;
      if (k === c.length) first++;
      else pending[first] = c.subarray(k);
    }
    if (first > 64) {
      pending = pending.slice(first);
      first = 0;
    }
    have -= n;
    return out;
  };
  const bad = (why: string): { bad: string } => {
    reader.cancel().catch(() => {});
    return { bad: `lazy refused the push: ${why}` };
  };
  /** The next pkt-line: its payload, "flush", or a refusal. */
  const next = async (): Promise<Uint8Array | "flush" | { bad: string }> => {
    if (!(await fill(4))) return bad("the request ended before its command list did");
    const head = dec.decode(take(4));
    if (!/^[0-9a-f]{4}$/.test(head)) return bad(`a pkt-line length is not four hex digits (${JSON.stringify(head)})`);
    const len = Number.parseInt(head, 16);
    used += 4;
    if (len === 0) return "flush";
    if (len < 5 || len > MAX_PKT) return bad(`a pkt-line of length ${len} (git's are 5 to ${MAX_PKT} bytes, or 0000)`);
    if (used - 4 + len > MAX_COMMAND_BYTES)
      return bad(`the commands before the pack exceed ${MAX_COMMAND_BYTES} bytes (lazy's bound on a push's command list)`);
    if (!(await fill(len - 4))) return bad("the request ended inside a pkt-line");
    used += len - 4;
    return take(len - 4);
  };

  const commands: Command[] = [];
  const caps = new Set<string>();
  for (;;) {
    const p = await next();
    if (p === "flush") break;
    if (!(p instanceof Uint8Array)) return p;
    let line = p[p.length - 1] === 0x0a ? p.subarray(0, -1) : p;
    const nul = line.indexOf(0);
    if (nul >= 0) {
      for (const c of dec.decode(line.subarray(nul + 1)).split(" ")) if (c) caps.add(c);
      line = line.subarray(0, nul);
    }
    const text = dec.decode(line);
    if (text.startsWith("shallow ")) {
      if (!OID.test(text.slice(8))) return bad(`a shallow line names no object id (${JSON.stringify(text.slice(0, 100))})`);
      continue;
    }
    if (text === "push-cert") return bad("signed pushes (git push --signed) do not pass through lazy's broker");
    const [old, neu, ref, ...more] = text.split(" ");
    if (!old || !neu || !ref || more.length || !OID.test(old) || !OID.test(neu) || old.length !== neu.length)
      return bad(`a command is not "<old> <new> <ref>" (${JSON.stringify(text.slice(0, 200))})`);
    if (commands.length >= MAX_REFS) return bad(`more than ${MAX_REFS} refs in one push (lazy's bound on a push); push fewer at a time`);
    commands.push({ old, new: neu, ref });
  }
  if (commands.length === 0) return bad("the command list is empty");
  if (caps.has("push-options")) {
    for (;;) {
      const p = await next();
      if (p === "flush") break;
      if (!(p instanceof Uint8Array)) return p;
    }
  }
  const rest = new ReadableStream<Uint8Array>({
    async pull(c) {
      const { done, value } = await reader.read();
      if (done) c.close();
      else c.enqueue(value);
    },
    cancel: (why) => reader.cancel(why),
  });
  return { commands, caps: [...caps], consumed, rest };
}

const ZERO = /^0+$/;
/** Whether a command deletes its ref (the new id is all zeros). */
export const isDelete = (c: Command): boolean => ZERO.test(c.new);

const enc = new TextEncoder();
function pkt(data: Uint8Array | string): Uint8Array<ArrayBuffer> {
  const bytes = typeof data === "string" ? enc.encode(data) : data;
  const out = new Uint8Array(bytes.length + 4);
  out.set(enc.encode((bytes.length + 4).toString(16).padStart(4, "0")));
  out.set(bytes, 4);
  return out;
}
const FLUSH = enc.encode("0000");
/** One line, no control bytes: git prints the reason inside `(…)` on the ref's line. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control bytes are what it removes
const oneLine = (s: string): string => s.replace(/[\x00-\x1f\x7f]+/g, " ").trim();

/**
 * The receive-pack result a real git client prints as its own error: `unpack ok`, then
 * `ng <ref> <reason>` for every command (report-status and report-status-v2 word a refusal
 * alike; perRef words one ref's line, reason by default), inside side-band channel 1 when the client asked for side-band, with the reason
 * also on channel 2 (git prints it as `remote: …`). A client that asked for no report at all
 * would read a 200 as success, so it gets a 403 with the reason as text instead.
 */
export function rejection(commands: Command[], caps: string[], reason: string, perRef?: (c: Command) => string): Refusal {
  const why = (c: Command) => oneLine(perRef ? perRef(c) : reason);
  const report = caps.includes("report-status") || caps.includes("report-status-v2");
  const message = oneLine(reason);
  if (!report) return textRefusal(403, message);
  const status = concat([pkt("unpack ok\n"), ...commands.map((c) => pkt(`ng ${c.ref} ${why(c)}\n`)), FLUSH]);
  const band = caps.includes("side-band-64k") ? 65515 : caps.includes("side-band") ? 995 : 0;
  const headers = { "content-type": "application/x-git-receive-pack-result", "cache-control": "no-cache" };
  if (!band) return { status: 200, headers, body: status };
  const parts: Uint8Array[] = [];
  const msg = enc.encode(`${message}\n`);
  for (let at = 0; at < msg.length; at += band) parts.push(pkt(concat([Uint8Array.of(2), msg.subarray(at, at + band)])));
  for (let at = 0; at < status.length; at += band) parts.push(pkt(concat([Uint8Array.of(1), status.subarray(at, at + band)])));
  parts.push(FLUSH);
  return { status: 200, headers, body: concat(parts) };
}

/**
 * A refusal as plain text: git prints a text/plain body of a failed info/refs as `remote: …`
 * lines before its own `fatal: unable to access …: … 403`. 403, not 401: a 401 would make git
 * ask its credential helper again, and not 404, which git words as "repository not found".
 */
export function textRefusal(status: number, message: string): Refusal {
  return { status, headers: { "content-type": "text/plain; charset=utf-8" }, body: enc.encode(`${oneLine(message)}\n`) };
}

export interface GitScope {
  service: Service;
  /** The project's origin repository on this service's host ("owner/name"), or null. */
  originRepo: string | null;
  /** The task's ref name: pushes may move only refs/heads/lazy/<taskRef>…. */
  taskRef: string;
}

/**
 * The broker's whole git rule for one request: null when the request is not git's (the
 * caller's other rules apply); a refusal to answer instead of forwarding; or the body to forward
 * (for a push: the bytes already read, then the rest, unchanged).
 */
export async function scopeGit(
  req: { method: string; path: string; query: URLSearchParams; headers: Headers; body: ReadableStream<Uint8Array> | null },
  scope: GitScope,
): Promise<null | { refuse: Refusal } | { forward: ReadableStream<Uint8Array> | null; request: GitRequest }> {
  const g = gitRequest(req.method, req.path, req.query);
  if (g === null) return null;
  if ("bad" in g) return { refuse: textRefusal(403, g.bad) };
  const { service, originRepo, taskRef } = scope;
  if (!repoAllowed(g.repo, service, originRepo)) return { refuse: textRefusal(403, repoRefusal(g.repo, service, originRepo)) };
  if (g.service === "upload-pack") return { forward: req.body, request: g };
  const off = `lazy: service ${service.name} does not push (push = false); set push = true on [[service]] ${service.name} in lazy.toml (then lazy trust) to let a task push refs/heads/lazy/${taskRef}, or bring work in with lazy accept`;
  if (g.phase === "refs") return service.push ? { forward: req.body, request: g } : { refuse: textRefusal(403, off) };
  const encoding = req.headers.get("content-encoding");
  if (encoding && encoding.toLowerCase() !== "identity")
    return {
      refuse: textRefusal(
        415,
        `lazy refused the push: a receive-pack request with Content-Encoding ${encoding} (git never compresses a push)`,
      ),
    };
  if (!req.body) return { refuse: textRefusal(400, "lazy refused the push: the request has no body") };
  const read = await readCommands(req.body);
  if ("bad" in read) return { refuse: textRefusal(400, read.bad) };
  if (!service.push) {
    read.rest.cancel().catch(() => {});
    return { refuse: rejection(read.commands, read.caps, off) };
  }
  const refused = read.commands.filter((c) => !allowedRef(c.ref, taskRef));
  if (refused.length) {
    read.rest.cancel().catch(() => {});
    const rule = pushRule(taskRef);
    const names = refused.map((c) => c.ref).join(", ");
    return {
      refuse: rejection(read.commands, read.caps, rule, (c) =>
        allowedRef(c.ref, taskRef) ? `not pushed: refused with ${names} (${rule})` : rule,
      ),
    };
  }
  return { forward: stitch(read.consumed, read.rest), request: g };
}

/** The bytes already read, then the rest of the stream, unchanged. */
function stitch(head: Uint8Array[], rest: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const queue = [...head];
  const reader = rest.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      const first = queue.shift();
      if (first) return c.enqueue(first);
      const { done, value } = await reader.read();
      if (done) c.close();
      else c.enqueue(value);
    },
    cancel: (why) => reader.cancel(why),
  });
}
