/**
 * The GitHub App source against a local server that plays GitHub's API (GitHub is not reachable
 * here): it verifies the JWT's RS256 signature with the App's public key, its issuer and its
 * lifetime, answers an installation for one repository and 404 for others, and mints short-lived
 * tokens. The daemon's code mints one token per task, mints again inside the refresh margin, and
 * words each refusal without the key or a token in it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createPublicKey, generateKeyPairSync, type KeyObject, verify } from "node:crypto";
import { SourceError, Sources } from "../../src/broker/sources";
import { encodePem } from "../../src/credentials";
import { until } from "../helpers/lazy";
import { keptLog } from "./helpers";

const APP_ID = "123456";
const INSTALLATION = 4242;

function rsaPem(): string {
  return generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "pem", type: "pkcs1" }).toString();
}
const appPem = rsaPem();
const otherPem = rsaPem();
/** As `lazy auth set` stores a PEM. */
const stored = (pem: string) => {
  const r = encodePem(pem);
  if (!("stored" in r)) throw new Error(r.refused);
  return r.stored;
};

interface Minted {
  token: string;
  body: { repositories?: string[]; permissions?: Record<string, string> };
}

/** GitHub's API as far as the App flow goes, checking what GitHub checks. */
function fakeGitHub(publicKey: KeyObject, tokenLifeMs: number) {
  const minted: Minted[] = [];
  const jwts: string[] = [];
  const denied: string[] = [];
  const checkJwt = (req: Request): string | undefined => {
    const auth = req.headers.get("authorization") ?? "";
    const jwt = auth.startsWith("Bearer ") ? auth.slice(7) : "";
    jwts.push(jwt);
    const [head, body, sig] = jwt.split(".");
    if (!head || !body || !sig) return "A JSON web token could not be decoded";
    if (JSON.parse(Buffer.from(head, "base64url").toString()).alg !== "RS256") return "'alg' must be RS256";
    if (!verify("sha256", Buffer.from(`${head}.${body}`), publicKey, Buffer.from(sig, "base64url")))
      return "A JSON web token could not be decoded";
    const claims = JSON.parse(Buffer.from(body, "base64url").toString());
    const now = Math.floor(Date.now() / 1000);
    if (claims.iss !== APP_ID) return "'Issuer' claim ('iss') must be an Integer";
    if (!(claims.exp > now) || claims.exp - claims.iat > 600 || claims.iat > now + 60)
      return "'Expiration time' claim ('exp') is too far in the future";
    return undefined;
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (req.headers.get("accept") !== "application/vnd.github+json" || req.headers.get("x-github-api-version") !== "2022-11-28")
        return Response.json({ message: "bad headers" }, { status: 400 });
      const bad = checkJwt(req);
      if (bad) {
        denied.push(bad);
        return Response.json({ message: bad }, { status: 401 });
      }
      if (req.method === "GET" && url.pathname === "/repos/acme/widgets/installation") return Response.json({ id: INSTALLATION });
      if (req.method === "GET" && url.pathname.endsWith("/installation")) return Response.json({ message: "Not Found" }, { status: 404 });
      if (req.method === "POST" && url.pathname === `/app/installations/${INSTALLATION}/access_tokens`) {
        const body = (await req.json()) as Minted["body"];
        const token = `ghs_${crypto.randomUUID().replaceAll("-", "")}`;
        minted.push({ token, body });
        return Response.json({ token, expires_at: new Date(Date.now() + tokenLifeMs).toISOString() }, { status: 201 });
      }
      return Response.json({ message: "Not Found" }, { status: 404 });
    },
  });
  return { api: `http://127.0.0.1:${server.port}`, minted, jwts, denied, stop: () => server.stop(true) };
}

const servers: { stop(): void }[] = [];
afterAll(() => {
  for (const s of servers) s.stop();
});

function setup(opts: { key: string; tokenLifeMs?: number; refreshMs?: number }) {
  const gh = fakeGitHub(createPublicKey(appPem), opts.tokenLifeMs ?? 60 * 60_000);
  servers.push(gh);
  const log = keptLog();
  const creds: Record<string, string> = { "gh-app": stored(opts.key) };
  const sources = new Sources({
    credential: async (n) => creds[n] ?? null,
    log,
    cwd: "/",
    ...(opts.refreshMs !== undefined ? { appRefreshMs: opts.refreshMs } : {}),
  });
  const spec = { kind: "app" as const, appId: APP_ID, key: "gh-app", permissions: { contents: "write" as const }, api: gh.api };
  return { gh, log, sources, spec, creds };
}

async function refusal(p: Promise<unknown>): Promise<SourceError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(SourceError);
  return e as SourceError;
}

/** Nothing of the key, a token or a JWT in these texts. */
function clean(texts: string[], secrets: string[]): void {
  const keyLines = [appPem, otherPem].flatMap((p) => p.split("\n").filter((l) => l.length > 40));
  for (const t of texts) {
    for (const l of keyLines) expect(t).not.toContain(l);
    for (const s of secrets) if (s) expect(t).not.toContain(s);
    expect(t).not.toContain("lazy-private-key:");
  }
}

describe("GitHub App source", () => {
  test("one token per task, scoped to its repository and the permissions named; one mint for concurrent asks; forgotten with the task", async () => {
    const { gh, log, sources, spec } = setup({ key: appPem });
    const t1 = { id: "t1", repos: ["acme/widgets"] };
    const t2 = { id: "t2", repos: ["acme/widgets"] };
    const a = await Promise.all([sources.get("github", spec, t1), sources.get("github", spec, t1), sources.get("github", spec, t1)]);
    expect(gh.minted.length).toBe(1);
    expect(a[1]!.value).toBe(a[0]!.value);
    expect(a[0]!.value).toBe(gh.minted[0]!.token);
    expect(a[0]!.expiresAt).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(gh.minted[0]!.body).toEqual({ repositories: ["widgets"], permissions: { contents: "write" } });
    const b = await sources.get("github", spec, t2);
    expect(gh.minted.length).toBe(2);
    expect(b.value).not.toBe(a[0]!.value);
    // Cached per task: asked again, no mint.
    expect((await sources.get("github", spec, t1)).value).toBe(a[0]!.value);
    expect(gh.minted.length).toBe(2);
    // A task forgotten and asked again gets a new token.
    sources.forgetTask("t1");
    expect((await sources.get("github", spec, t1)).value).not.toBe(a[0]!.value);
    expect(gh.minted.length).toBe(3);
    expect(gh.denied).toEqual([]);
    const [status] = sources.status();
    expect(status).toMatchObject({ service: "github", kind: "app", ok: true });
    expect(status!.detail).toContain(`App ${APP_ID}: a token for task t1 (acme/widgets)`);
    clean([...log.lines, status!.detail], [...gh.minted.map((m) => m.token), ...gh.jwts]);
  });

  test("minted again once the token is inside the refresh margin", async () => {
    const { gh, sources, spec } = setup({ key: appPem, tokenLifeMs: 4_000, refreshMs: 2_500 });
    const t = { id: "t1", repos: ["acme/widgets"] };
    const first = await sources.get("github", spec, t);
    expect((await sources.get("github", spec, t)).value).toBe(first.value);
    expect(gh.minted.length).toBe(1);
    const second = await until(
      async () => {
        const s = await sources.get("github", spec, t);
        return s.value !== first.value ? s : undefined;
      },
      10_000,
      "a second token",
    );
    expect(second.value).toBe(gh.minted[1]!.token);
    expect(second.expiresAt!).toBeGreaterThan(first.expiresAt!);
    expect(gh.minted.length).toBe(2);
  });

  test("not installed on the repository: worded, and the status says so", async () => {
    const { gh, log, sources, spec } = setup({ key: appPem });
    const e = await refusal(sources.get("github", spec, { id: "t1", repos: ["acme/secret-sauce"] }));
    expect(e.message).toBe(
      `the GitHub App ${APP_ID} (service github) is not installed on acme/secret-sauce: install it on that repository (github.com/settings/installations), or change repos, then retry the turn.`,
    );
    expect(gh.minted).toEqual([]);
    expect(sources.status()).toEqual([expect.objectContaining({ service: "github", kind: "app", ok: false, detail: e.message })]);
    clean([e.message, ...log.lines], gh.jwts);
  });

  test("a key that is not the App's: GitHub's 401, worded as the key not matching the App id; retried only after the back-off", async () => {
    const { gh, log, sources, spec } = setup({ key: otherPem });
    const t = { id: "t1", repos: ["acme/widgets"] };
    const e = await refusal(sources.get("github", spec, t));
    expect(e.message).toContain(`the GitHub App ${APP_ID} (service github): GitHub refused the App's signed token`);
    expect(e.message).toContain(`the private key stored as gh-app does not match App id ${APP_ID}`);
    expect(gh.denied).toEqual(["A JSON web token could not be decoded"]);
    expect((await refusal(sources.get("github", spec, t))).message).toBe(e.message);
    expect(gh.denied.length).toBe(1);
    clean([e.message, ...log.lines], gh.jwts);
  });

  test("no key stored, a token as the key, an unreachable API: each worded", async () => {
    const { sources, spec, creds } = setup({ key: appPem });
    const t = { id: "t1", repos: ["acme/widgets"] };
    const e1 = await refusal(sources.get("github", { ...spec, key: "missing" }, t));
    expect(e1.message).toContain("no credential missing holds its private key: lazy auth set missing < the App's .pem file");
    creds.tok = "ghp_" + "q".repeat(36);
    const e2 = await refusal(sources.get("github2", { ...spec, key: "tok" }, t));
    expect(e2.message).toContain("the credential tok is not a private key");
    expect(e2.message).not.toContain(creds.tok);
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const dead = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    const e3 = await refusal(sources.get("github3", { ...spec, api: dead }, t));
    expect(e3.message).toContain(`could not reach ${dead}/repos/acme/widgets/installation`);
    expect(e3.message).toContain("Check the network");
    clean([e1.message, e2.message, e3.message], []);
  });
});
