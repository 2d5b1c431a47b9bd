/**
 * Issue 36's GitHub App proof through the daemon: the App's private key is stored with
 * `lazy auth set github-app` (the PEM on stdin), and a `[[service]]` of shape "github" takes its
 * token from the App. GitHub's API is not reachable here, so a loopback HTTPS server with a CA of
 * the test's plays it: it verifies each JWT's RS256 signature with the App's public key and its
 * claims, answers the installation of owner/app, and mints installation tokens, each one the git
 * host (test/helpers/git-https.ts) was started to accept. Two tasks (real Claude Code in real
 * containers, a mock provider telling them what to run) each clone owner/app through the broker:
 * each task gets its own token, minted for it, and neither token nor the key is anywhere in
 * either container.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bash, containerProject, launched, settled, teardown } from "../helpers/fixtures";
import { type GitHost, startGitHost } from "../helpers/git-https";
import { type Project, sh } from "../helpers/lazy";
import { serverTls } from "../helpers/local-servers";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-BROKERAPP-${"a".repeat(69)}AA`;
const APP_ID = "424242";
const INSTALLATION = 777;
const BASE62 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const ghs = () => `ghs_${Array.from(crypto.getRandomValues(new Uint8Array(36)), (b) => BASE62[b % 62]).join("")}`;
/** The two installation tokens the fake API hands out, in order. */
const TOKENS = [ghs(), ghs()];
/** A text as a grep pattern that does not match its own spelling: `abcd[e]f…`. */
const unmatched = (t: string) => `${t.slice(0, 4)}[${t[4]}]${t.slice(5)}`;
const PEM = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "pem", type: "pkcs8" }).toString();
/** A line from the key's middle: in the PEM and, PKCS#8 base64 at the same offsets, in the stored form too. */
const KEY_LINE = PEM.split("\n")[10]!;
const CODES = ["app1", "app2"];

let mock: Mock.MockProvider;
let host: GitHost;
let p: Project;
let dir: string;
let api: ReturnType<typeof Bun.serve>;
const minted: { token: string; body: any }[] = [];
const verified: string[] = [];
const denied: string[] = [];

const show = (code: string, file: string) => sh(p.root, `git show lazy/${code}:out/${file}`).out;

/** GitHub's API as far as the App flow goes, checking what GitHub checks of the JWT. */
function fakeApi(tls: { certFile: string; keyFile: string }) {
  const pub = createPublicKey(PEM);
  const check = (req: Request): string | undefined => {
    const auth = req.headers.get("authorization") ?? "";
    const [head, body, sig] = (auth.startsWith("Bearer ") ? auth.slice(7) : "").split(".");
    if (!head || !body || !sig) return "A JSON web token could not be decoded";
    if (JSON.parse(Buffer.from(head, "base64url").toString()).alg !== "RS256") return "'alg' must be RS256";
    if (!verify("sha256", Buffer.from(`${head}.${body}`), pub, Buffer.from(sig, "base64url"))) return "bad signature";
    const claims = JSON.parse(Buffer.from(body, "base64url").toString());
    const now = Math.floor(Date.now() / 1000);
    if (claims.iss !== APP_ID) return "wrong issuer";
    if (!(claims.exp > now) || claims.exp - claims.iat > 600 || claims.iat > now + 60) return "bad lifetime";
    return undefined;
  };
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: Bun.file(tls.certFile), key: Bun.file(tls.keyFile) },
    async fetch(req) {
      const url = new URL(req.url);
      const bad = check(req);
      if (bad) {
        denied.push(bad);
        return Response.json({ message: bad }, { status: 401 });
      }
      verified.push(`${req.method} ${url.pathname}`);
      if (req.method === "GET" && url.pathname === "/repos/owner/app/installation") return Response.json({ id: INSTALLATION });
      if (req.method === "POST" && url.pathname === `/app/installations/${INSTALLATION}/access_tokens`) {
        const token = TOKENS[minted.length];
        if (!token) return Response.json({ message: "the test mints two tokens" }, { status: 403 });
        minted.push({ token, body: await req.json() });
        return Response.json({ token, expires_at: new Date(Date.now() + 3_600_000).toISOString() }, { status: 201 });
      }
      return Response.json({ message: "Not Found" }, { status: 404 });
    },
  });
}

beforeAll(async () => {
  mock = await Mock.anthropic();
  dir = mkdtempSync(join(tmpdir(), "lazy-app-api-"));
  const tls = serverTls(dir, "api.lazy.test");
  api = fakeApi(tls);
  host = await startGitHost({
    token: TOKENS[0]!,
    more: [TOKENS[1]!],
    repos: { "owner/app": { files: { "README.md": "the app a91c\n" } } },
  });
  // The daemon trusts both of the test's CAs: the git host's and the API's.
  const cas = join(dir, "cas.pem");
  writeFileSync(cas, `${host.caPem.trim()}\n${tls.caPem.trim()}\n`);
  p = await containerProject(mock, KEY, {
    env: { LAZY_RESOLVE: `${host.name}=127.0.0.1`, NODE_EXTRA_CA_CERTS: cas },
    extra: [
      "[[service]]",
      'shape = "github"',
      `hosts = ["${host.name}:${host.port}"]`,
      `url = "https://${host.name}:${host.port}"`,
      `app = { id = ${APP_ID}, key = "github-app", api = "https://127.0.0.1:${api.port}" }`,
      'repos = ["owner/app"]',
      "",
    ].join("\n"),
  });
  p.trust();
  await p.ok(["auth", "set", "github-app"], { stdin: PEM });
  for (const code of CODES) {
    mock.answer(
      bash(
        "cloned.",
        [
          "W=$(pwd); mkdir -p out; cd /tmp",
          `git clone -q ${host.url("owner/app")} app > $W/out/clone.txt 2>&1; echo "exit $?" >> $W/out/clone.txt`,
          "cat app/README.md >> $W/out/clone.txt",
          `printf 'protocol=https\\nhost=${host.name}:${host.port}\\n\\n' | git credential fill > $W/out/credential.txt 2>&1`,
          `env > $W/out/env.txt`,
          `sudo grep -rlsI --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev ${[...TOKENS, KEY_LINE].map((t) => `-e '${unmatched(t)}'`).join(" ")} / > $W/out/found.txt`,
          `sudo sh -c "cat /proc/[0-9]*/environ | tr '\\\\0' '\\\\n' | grep -c ${TOKENS.map((t) => `-e '${unmatched(t)}'`).join(" ")}" > $W/out/environ.txt`,
          'cd "$W" && git add -f out && git commit -qm results',
        ].join("; "),
        "clone the app",
        { timeout: 600_000 },
      ),
    );
    await launched(p, code, "clone the app");
    await settled(p, code);
  }
}, 900_000);

afterAll(async () => {
  await teardown(p, mock);
  await host?.stop();
  api?.stop(true);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a GitHub App's tokens through the daemon", () => {
  test("each task's clone worked", () => {
    for (const code of CODES) {
      const clone = show(code, "clone.txt");
      expect(clone).toContain("exit 0");
      expect(clone).toContain("the app a91c");
    }
  });

  test("a token was minted per task, with a JWT the API verified, scoped to the repository and the permissions", () => {
    expect(denied).toEqual([]);
    expect(minted.map((m) => m.token)).toEqual(TOKENS);
    for (const m of minted)
      expect(m.body).toEqual({ repositories: ["app"], permissions: { contents: "write", metadata: "read", pull_requests: "write" } });
    expect(verified.filter((v) => v === `POST /app/installations/${INSTALLATION}/access_tokens`)).toHaveLength(2);
  });

  test("the git host saw the first task's token, then the second's", () => {
    const lines = host.log().split("\n");
    const first = lines.map((l, i) => (l.includes(`x-access-token:${TOKENS[0]}`) ? i : -1)).filter((i) => i >= 0);
    const second = lines.map((l, i) => (l.includes(`x-access-token:${TOKENS[1]}`) ? i : -1)).filter((i) => i >= 0);
    expect(first.length).toBeGreaterThan(0);
    expect(second.length).toBeGreaterThan(0);
    expect(Math.max(...first)).toBeLessThan(Math.min(...second));
  });

  test("neither token nor the App's key is in either container", () => {
    const placeholders = new Set<string>();
    for (const code of CODES) {
      const cred = show(code, "credential.txt");
      const m = /password=(ghs_lazy[A-Za-z0-9]{32})/.exec(cred);
      expect(m).not.toBeNull();
      placeholders.add(m![1]!);
      expect(show(code, "env.txt")).toContain(`GH_ENTERPRISE_TOKEN=${m![1]}\n`);
      for (const t of TOKENS) {
        expect(cred).not.toContain(t);
        expect(show(code, "env.txt")).not.toContain(t);
      }
      expect(show(code, "found.txt").trim()).toBe("");
      expect(show(code, "environ.txt").trim()).toBe("0");
    }
    // Each task its own placeholder.
    expect(placeholders.size).toBe(2);
  });

  test("the audit and lazy doctor name the App, never a token", async () => {
    const r = await p.run(["stats", "audit", "--json", "--limit", "1000"]);
    const rows = JSON.parse(r.stdout).rows.filter((x: any) => x.role === "broker");
    expect(rows.map((x: any) => x.taskRef).sort()).toContain("app1");
    expect(rows.map((x: any) => x.taskRef).sort()).toContain("app2");
    for (const t of TOKENS) expect(JSON.stringify(rows)).not.toContain(t);
    const doctor = await p.run(["doctor"]);
    const out = `${doctor.stdout}${doctor.stderr}`;
    expect(out).toMatch(
      new RegExp(`service github: .*brokered, token from GitHub App ${APP_ID} key github-app; last token App ${APP_ID}: a token for task`),
    );
    for (const t of TOKENS) expect(out).not.toContain(t);
    for (const t of TOKENS) expect(p.log()).not.toContain(t);
  });
});
