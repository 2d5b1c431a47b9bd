/**
 * The broker's git rules (src/broker/git.ts) with the real git client against git's own
 * `git http-backend`, run as a CGI behind a small Bun.serve that applies scopeGit first, the way
 * the broker does: what lands, what git prints when a push is refused, and that a refused
 * request never reaches the backend. No daemon, no Docker.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as BrokerGit from "../../src/broker/git";
import type { Service } from "../../src/broker/types";

const ZERO = "0".repeat(40);
const enc = new TextEncoder();
const pkt = (s: string) => `${(enc.encode(s).length + 4).toString(16).padStart(4, "0")}${s}`;

let root: string;
let server: ReturnType<typeof Bun.serve>;
let service: Service;
/** Every request the backend ran, as "METHOD /path". */
const backend: string[] = [];

async function run(cwd: string, args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn(args, {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH!, HOME: root, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0", LANG: "C", ...env },
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code };
}
async function ok(cwd: string, cmd: string) {
  const r = await run(cwd, ["bash", "-c", cmd]);
  if (r.code !== 0) throw new Error(`${cmd}: ${r.err}`);
  return r.out.trim();
}

/** git http-backend as a CGI: the request in its environment and stdin, its output parsed. */
async function httpBackend(req: Request, body: ReadableStream<Uint8Array> | null): Promise<Response> {
  const url = new URL(req.url);
  backend.push(`${req.method} ${url.pathname}`);
  const env: Record<string, string> = {
    PATH: process.env.PATH!,
    GIT_PROJECT_ROOT: join(root, "srv"),
    GIT_HTTP_EXPORT_ALL: "1",
    PATH_INFO: url.pathname,
    REQUEST_METHOD: req.method,
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: req.headers.get("content-type") ?? "",
    REMOTE_USER: "tester",
    REMOTE_ADDR: "127.0.0.1",
  };
  const proto = req.headers.get("git-protocol");
  if (proto) env.GIT_PROTOCOL = proto;
  const enc = req.headers.get("content-encoding");
  if (enc) env.HTTP_CONTENT_ENCODING = enc;
  const p = Bun.spawn(["git", "http-backend"], { env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  if (body) for await (const chunk of body) p.stdin.write(chunk);
  p.stdin.end();
  const out = new Uint8Array(await new Response(p.stdout).arrayBuffer());
  await p.exited;
  const split = Buffer.from(out).indexOf("\r\n\r\n");
  const head = new TextDecoder().decode(out.subarray(0, split));
  const headers = new Headers();
  let status = 200;
  for (const line of head.split("\r\n")) {
    const [k, ...v] = line.split(":");
    if (k!.toLowerCase() === "status") status = Number.parseInt(v.join(":").trim(), 10);
    else headers.set(k!, v.join(":").trim());
  }
  return new Response(out.subarray(split + 4), { status, headers });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "lazy-broker-git-"));
  writeFileSync(join(root, ".gitconfig"), "[user]\n\tname = T\n\temail = t@e\n[init]\n\tdefaultBranch = main\n");
  await ok(root, "mkdir -p srv/acme srv/other work && git init -q --bare srv/acme/app.git && git init -q --bare srv/other/secret.git");
  await ok(root, "git -C srv/acme/app.git config http.receivepack true && git -C srv/other/secret.git config http.receivepack true");
  await ok(root, "cd work && git init -q && echo one > a && git add a && git commit -qm one && git push -q ../srv/acme/app.git HEAD:main");
  await ok(root, "cd work && git push -q ../srv/other/secret.git HEAD:main");
  service = {
    name: "forge",
    shape: "github",
    hosts: ["127.0.0.1"],
    auth: { kind: "bearer" },
    source: { kind: "credential", name: "forge" },
    repos: [],
    push: true,
    scopes: [],
    url: "http://127.0.0.1",
  };
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const scoped = await BrokerGit.scopeGit(
        { method: req.method, path: url.pathname, query: url.searchParams, headers: req.headers, body: req.body },
        { service, originRepo: "Acme/App", taskRef: "k3f9" },
      );
      if (scoped === null) return new Response("not git", { status: 404 });
      if ("refuse" in scoped) {
        const r = scoped.refuse;
        return new Response(r.body, { status: r.status, headers: r.headers });
      }
      return httpBackend(req, scoped.forward);
    },
  });
  await ok(root, `git clone -q http://127.0.0.1:${server.port}/acme/app.git clone`);
});
afterAll(() => {
  server?.stop(true);
  rmSync(root, { recursive: true, force: true });
});

const origin = () => `http://127.0.0.1:${server.port}`;
const refOf = (repo: string, ref: string) => ok(root, `git -C srv/${repo} rev-parse --verify -q ${ref} || echo none`);
const commit = (msg: string) => ok(join(root, "clone"), `echo ${msg} >> a && git commit -qam ${msg} && git rev-parse HEAD`);

describe("pushes through the broker", () => {
  test("the task's own branch lands", async () => {
    const head = await commit("two");
    const r = await run(join(root, "clone"), ["git", "push", "origin", "HEAD:refs/heads/lazy/k3f9"]);
    expect(r.code).toBe(0);
    expect(await refOf("acme/app.git", "refs/heads/lazy/k3f9")).toBe(head);
    // Its deletion, and a ref under it (the task's own namespace; git keeps a ref and refs
    // under it from standing at once).
    const push = async (spec: string) => (await run(join(root, "clone"), ["git", "push", "origin", spec])).code;
    expect(await push(":refs/heads/lazy/k3f9")).toBe(0);
    expect(await refOf("acme/app.git", "refs/heads/lazy/k3f9")).toBe("none");
    expect(await push("HEAD:refs/heads/lazy/k3f9/try")).toBe(0);
    expect(await refOf("acme/app.git", "refs/heads/lazy/k3f9/try")).toBe(head);
    expect(await push(":refs/heads/lazy/k3f9/try")).toBe(0);
    expect(await push("HEAD:refs/heads/lazy/k3f9")).toBe(0);
    expect(await refOf("acme/app.git", "refs/heads/lazy/k3f9")).toBe(head);
  });

  test("a push to main is refused in git's own words, and the backend never sees it", async () => {
    const before = await refOf("acme/app.git", "refs/heads/main");
    await commit("three");
    const seen = backend.length;
    const r = await run(join(root, "clone"), ["git", "push", "origin", "HEAD:main"]);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain(
      "! [remote rejected] HEAD -> main (lazy: this task may push only refs/heads/lazy/k3f9 and refs/heads/lazy/k3f9/*",
    );
    expect(r.err).toContain("remote: lazy: this task may push only refs/heads/lazy/k3f9");
    expect(await refOf("acme/app.git", "refs/heads/main")).toBe(before);
    // The advertisement went to the backend; the POST carrying the commands did not.
    expect(backend.slice(seen)).toEqual(["GET /acme/app.git/info/refs"]);
  });

  test("another task's branch, a look-alike prefix and a tag are refused too", async () => {
    for (const ref of ["refs/heads/lazy/other", "refs/heads/lazy/k3f9x", "refs/tags/v1"]) {
      const r = await run(join(root, "clone"), ["git", "push", "origin", `HEAD:${ref}`]);
      expect(r.code).not.toBe(0);
      expect(await refOf("acme/app.git", ref)).toBe("none");
    }
  });

  test("a push naming an allowed and a refused ref is refused whole", async () => {
    const head = await commit("four");
    const beforeTask = await refOf("acme/app.git", "refs/heads/lazy/k3f9");
    const seen = backend.length;
    const r = await run(join(root, "clone"), ["git", "push", "origin", "HEAD:refs/heads/lazy/k3f9", "HEAD:refs/heads/release"]);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain("! [remote rejected] HEAD -> release (lazy: this task may push only refs/heads/lazy/k3f9");
    expect(r.err).toContain("! [remote rejected] HEAD -> lazy/k3f9 (not pushed: refused with refs/heads/release");
    expect(await refOf("acme/app.git", "refs/heads/lazy/k3f9")).toBe(beforeTask);
    expect(beforeTask).not.toBe(head);
    expect(await refOf("acme/app.git", "refs/heads/release")).toBe("none");
    expect(backend.slice(seen).filter((b) => b.startsWith("POST"))).toEqual([]);
  });

  test("push = false: refused at the advertisement, with the setting named", async () => {
    service.push = false;
    try {
      const seen = backend.length;
      const r = await run(join(root, "clone"), ["git", "push", "origin", "HEAD:refs/heads/lazy/k3f9"]);
      expect(r.code).not.toBe(0);
      expect(r.err).toContain("remote: lazy: service forge does not push (push = false)");
      expect(r.err).toContain("403");
      expect(backend.length).toBe(seen);
    } finally {
      service.push = true;
    }
  });
});

describe("fetches through the broker", () => {
  test("the origin repository (repos = []) fetches; a repository not in repos is refused, and named", async () => {
    expect((await run(join(root, "clone"), ["git", "fetch", "-q", "origin"])).code).toBe(0);
    const seen = backend.length;
    const r = await run(root, ["git", "clone", `${origin()}/other/secret.git`, "stolen"]);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain(
      "remote: lazy: service forge reaches only these repositories: Acme/App (the project's origin); not other/secret",
    );
    expect(backend.length).toBe(seen);
    // Listed in repos, it fetches.
    service.repos = ["Other/Secret.git"];
    try {
      expect((await run(root, ["git", "clone", "-q", `${origin()}/other/secret.git`, "allowed"])).code).toBe(0);
      expect((await run(join(root, "clone"), ["git", "fetch", "-q", "origin"])).code).not.toBe(0);
    } finally {
      service.repos = [];
    }
  });

  test("odd paths are refused before the backend: dot segments, encoded slashes, empty parts, dumb HTTP", async () => {
    const seen = backend.length;
    for (const path of [
      "/acme/../other/secret.git/info/refs?service=git-upload-pack",
      "/acme%2Fapp.git/info/refs?service=git-upload-pack",
      "/acme//app.git/info/refs?service=git-upload-pack",
      "/acme/app.git/info/refs",
      "/acme/app.git/HEAD",
      "/acme/app.git/objects/info/packs",
    ]) {
      const res = await fetch(`${origin()}${path}`);
      expect(res.status).toBe(403);
      expect(await res.text()).toContain("lazy");
    }
    expect(backend.length).toBe(seen);
  });
});

describe("hostile receive-pack bodies are refused by the bound", () => {
  const post = (body: BodyInit, headers: Record<string, string> = {}) =>
    fetch(`${origin()}/acme/app.git/git-receive-pack`, {
      method: "POST",
      body,
      headers: { "content-type": "application/x-git-receive-pack-request", ...headers },
    });
  const cmd = (i: number, ref = `refs/heads/lazy/k3f9/r${i}`) => pkt(`${ZERO} ${"1".repeat(40)} ${ref}${i === 0 ? "\0report-status" : ""}`);

  test("a bad length, a short one, a body that ends early, gzip: 400/415 with the reason, backend untouched", async () => {
    const seen = backend.length;
    const cases: [BodyInit, string, Record<string, string>?][] = [
      ["zzzz", "four hex digits"],
      ["0003", "length 3"],
      ["ffff", "length 65535"],
      [cmd(0), "ended before its command list"],
      [`${cmd(0).slice(0, 30)}`, "ended inside a pkt-line"],
      [`${pkt("hello")}0000`, 'is not "<old> <new> <ref>"'],
      ["0000", "empty"],
      [`${cmd(0)}0000PACK`, "Content-Encoding gzip", { "content-encoding": "gzip" }],
    ];
    for (const [body, why, headers] of cases) {
      const res = await post(body, headers);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(await res.text()).toContain(why);
    }
    expect(backend.length).toBe(seen);
  });

  test("2000 refs: refused by the ref bound, none written", async () => {
    const seen = backend.length;
    const res = await post(`${Array.from({ length: 2000 }, (_, i) => cmd(i)).join("")}0000`);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain(`more than ${BrokerGit.MAX_REFS} refs`);
    expect(backend.length).toBe(seen);
    expect(await refOf("acme/app.git", "refs/heads/lazy/k3f9/r0")).toBe("none");
  });

  test("an endless command list is read no further than the byte bound", async () => {
    // Long refs, never a flush, never an end: readCommands stops at MAX_COMMAND_BYTES.
    let pulled = 0;
    const line = enc.encode(pkt(`${ZERO} ${"1".repeat(40)} refs/heads/lazy/k3f9/${"x".repeat(60000)}`));
    const endless = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += line.length;
        c.enqueue(line);
      },
    });
    const r = await BrokerGit.readCommands(endless);
    expect(r).toEqual({ bad: expect.stringContaining(`exceed ${BrokerGit.MAX_COMMAND_BYTES} bytes`) });
    expect(pulled).toBeLessThanOrEqual(BrokerGit.MAX_COMMAND_BYTES + 2 * line.length);
    // Over HTTP, the same bound answers while the client is still sending.
    const seen = backend.length;
    const res = await post(
      new ReadableStream<Uint8Array>({
        pull: (c) => c.enqueue(line),
      }),
    );
    expect(res.status).toBe(400);
    expect(await res.text()).toContain(`exceed ${BrokerGit.MAX_COMMAND_BYTES} bytes`);
    expect(backend.length).toBe(seen);
  });

  test("one endless pkt-line: the declared length is checked, the payload is not awaited past git's maximum", async () => {
    let pulled = 0;
    const r = await BrokerGit.readCommands(
      new ReadableStream<Uint8Array>(
        {
          pull(c) {
            pulled += 1;
            c.enqueue(enc.encode(pulled === 1 ? "fff1" : "x".repeat(4096)));
          },
        },
        { highWaterMark: 0 },
      ),
    );
    expect(r).toEqual({ bad: expect.stringContaining("length 65521") });
    expect(pulled).toBe(1);
  });
});

describe("the pieces", () => {
  test("readCommands: a push sent one byte at a time reads the same, and forwards every byte", async () => {
    const caps = "report-status side-band-64k push-options";
    const body = enc.encode(
      `${pkt(`shallow ${"2".repeat(40)}\n`)}${pkt(`${ZERO} ${"1".repeat(40)} refs/heads/lazy/k3f9\0${caps}\n`)}${pkt(`${"1".repeat(40)} ${ZERO} refs/heads/lazy/k3f9/old\n`)}0000${pkt("ci.skip\n")}0000PACK-BYTES`,
    );
    let i = 0;
    const r = await BrokerGit.readCommands(
      new ReadableStream<Uint8Array>(
        { pull: (c) => (i < body.length ? c.enqueue(body.subarray(i, ++i)) : c.close()) },
        { highWaterMark: 0 },
      ),
    );
    if ("bad" in r) throw new Error(r.bad);
    expect(r.commands).toEqual([
      { old: ZERO, new: "1".repeat(40), ref: "refs/heads/lazy/k3f9" },
      { old: "1".repeat(40), new: ZERO, ref: "refs/heads/lazy/k3f9/old" },
    ]);
    expect(r.caps.sort()).toEqual(caps.split(" ").sort());
    const all = Buffer.concat([...r.consumed, new Uint8Array(await new Response(r.rest).arrayBuffer())]);
    expect(all.equals(Buffer.from(body))).toBe(true);
    expect(new TextDecoder().decode(all).endsWith("0000PACK-BYTES")).toBe(true);
  });

  test("gitRequest names GitHub- and GitLab-style repositories", () => {
    const q = (s: string) => new URLSearchParams(s);
    expect(BrokerGit.gitRequest("GET", "/Owner/Name.git/info/refs", q("service=git-receive-pack"))).toEqual({
      repo: "owner/name",
      service: "receive-pack",
      phase: "refs",
    });
    expect(BrokerGit.gitRequest("POST", "/group/sub/name.git/git-upload-pack", q(""))).toEqual({
      repo: "group/sub/name",
      service: "upload-pack",
      phase: "rpc",
    });
    expect(BrokerGit.gitRequest("GET", "/repos/owner/name/pulls", q(""))).toBeNull();
    expect(BrokerGit.gitRequest("GET", "/owner/name/info/refs", q("service=git-upload-pack&service=git-receive-pack"))).toHaveProperty(
      "bad",
    );
    expect(BrokerGit.gitRequest("GET", "/owner/name/git-receive-pack", q(""))).toHaveProperty("bad");
    expect(BrokerGit.gitRequest("GET", "/name.git/info/refs", q("service=git-upload-pack"))).toHaveProperty("bad");
  });

  test("allowedRef: the task's branch and below, nothing else", () => {
    expect(BrokerGit.allowedRef("refs/heads/lazy/k3f9", "k3f9")).toBe(true);
    expect(BrokerGit.allowedRef("refs/heads/lazy/k3f9/a/b", "k3f9")).toBe(true);
    for (const ref of [
      "refs/heads/lazy/k3f9x",
      "refs/heads/lazy/k3f9/",
      "refs/heads/lazy/k3f9/../main",
      "refs/heads/lazy/k3f9/.x",
      "refs/heads/lazy/k3f9/a.lock",
      "refs/heads/main",
    ])
      expect(BrokerGit.allowedRef(ref, "k3f9")).toBe(false);
    expect(BrokerGit.allowedRef("refs/heads/lazy/a/b", "a/b")).toBe(false);
  });

  test("repoOfUrl reads both remote spellings", () => {
    expect(BrokerGit.repoOfUrl("https://github.com/Acme/App.git")).toEqual({ host: "github.com", repo: "acme/app" });
    expect(BrokerGit.repoOfUrl("git@gitlab.corp:group/sub/app.git")).toEqual({ host: "gitlab.corp", repo: "group/sub/app" });
    expect(BrokerGit.repoOfUrl("https://npm.corp:8443/x")).toBeNull();
  });
});
