/**
 * What a task container gets for brokered services (src/broker/container.ts), read back by the
 * real tools on this machine in a temp HOME: git's credential helper answers the placeholder for
 * the service's host and nothing for another, npm and pip send the placeholder to the registry
 * (a loopback server records what arrives), docker's config holds it, and nothing in the share
 * is token-shaped but the placeholders given. No daemon, no Docker, no network.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as Share from "../../src/broker/container";
import type { Service } from "../../src/broker/types";

const PH = {
  github: `ghp_lazy${"a".repeat(32)}`,
  gitlab: `glpat-lazy${"b".repeat(16)}`,
  npm: `npm_lazy${"c".repeat(28)}`,
  pypi: `pypi-lazy${"d".repeat(40)}`,
  oci: `lazy-svc-${"e".repeat(24)}`,
  forge: `lazy-svc-${"f".repeat(24)}`,
};

let root: string;
let mount: string;
let registry: ReturnType<typeof Bun.serve>;
/** What reached the loopback registry: path and Authorization header. */
const seen: { path: string; auth: string | null }[] = [];
let share: Share.Share;

const svc = (s: Partial<Service> & Pick<Service, "name" | "shape" | "url">): Service => ({
  hosts: [new URL(s.url).host],
  auth: { kind: "bearer" },
  source: { kind: "credential", name: s.name },
  repos: [],
  push: false,
  scopes: [],
  ...s,
});

async function run(args: string[], env: Record<string, string>, stdin?: string) {
  const p = Bun.spawn(args, {
    cwd: root,
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
    env: {
      PATH: process.env.PATH!,
      HOME: join(root, "home"),
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_TERMINAL_PROMPT: "0",
      GIT_ASKPASS: "",
      SSH_ASKPASS: "",
      NPM_CONFIG_UPDATE_NOTIFIER: "false",
      NPM_CONFIG_CACHE: join(root, "npm-cache"),
      PIP_DISABLE_PIP_VERSION_CHECK: "1",
      PIP_NO_CACHE_DIR: "1",
      LANG: "C",
      ...env,
    },
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code };
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "lazy-broker-share-"));
  mount = join(root, "mount");
  mkdirSync(join(root, "home"));
  // A helper a user's global config names: lazy's empty helper must drop it for brokered hosts.
  writeFileSync(
    join(root, "home", ".gitconfig"),
    "[credential]\n\thelper = \"!f() { printf 'username=u\\\\npassword=from-the-user-config\\\\n'; }; f\"\n",
  );
  registry = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      seen.push({ path: new URL(req.url).pathname, auth: req.headers.get("authorization") });
      return Response.json({ error: "not found" }, { status: 404 });
    },
  });
  const local = `http://127.0.0.1:${registry.port}`;
  const services: Service[] = [
    svc({ name: "github", shape: "github", url: "https://github.com", hosts: ["github.com", "api.github.com", "*.githubusercontent.com"] }),
    svc({ name: "gitlab", shape: "gitlab", url: "https://gitlab.corp:8443" }),
    svc({ name: "npm", shape: "npm", url: `${local}/npm/`, scopes: ["@acme"] }),
    svc({ name: "pypi", shape: "pypi", url: `${local}/simple/` }),
    svc({ name: "oci", shape: "oci", url: "https://ghcr.io", auth: { kind: "basic", user: "me" } }),
    svc({ name: "forge", shape: "custom", url: "https://git.corp", auth: { kind: "basic", user: "svc-bot" } }),
    svc({ name: "unplaced", shape: "github", url: "https://ghe.corp" }),
  ];
  const placeholders = new Map(Object.entries(PH));
  share = Share.containerShare(services, placeholders, { caPath: "/lazy/ca/bundle.pem", mount });
  for (const f of share.files) {
    mkdirSync(dirname(join(mount, f.name)), { recursive: true });
    writeFileSync(join(mount, f.name), f.content, { mode: f.mode });
  }
});
afterAll(() => {
  registry?.stop(true);
  rmSync(root, { recursive: true, force: true });
});

/** The share composed the way a launch does: over container-spec's own three git entries. */
const env = () =>
  Share.merge(
    {
      GIT_CONFIG_COUNT: "3",
      GIT_CONFIG_KEY_0: "safe.directory",
      GIT_CONFIG_VALUE_0: "*",
      GIT_CONFIG_KEY_1: "user.name",
      GIT_CONFIG_VALUE_1: "lazy agent",
      GIT_CONFIG_KEY_2: "user.email",
      GIT_CONFIG_VALUE_2: "agent@lazy.invalid",
    },
    share.env,
  );
const fill = (host: string) => run(["git", "credential", "fill"], env(), `protocol=https\nhost=${host}\n\n`);

describe("git", () => {
  test("the credential helper answers the placeholder for the service's hosts, with the forge's user name", async () => {
    const gh = await fill("github.com");
    expect(gh.code).toBe(0);
    expect(gh.out).toContain(`username=x-access-token\npassword=${PH.github}\n`);
    expect(gh.out).not.toContain("from-the-user-config");
    expect((await fill("raw.githubusercontent.com")).out).toContain(`password=${PH.github}`);
    expect((await fill("gitlab.corp:8443")).out).toContain(`username=oauth2\npassword=${PH.gitlab}\n`);
    expect((await fill("git.corp")).out).toContain(`username=svc-bot\npassword=${PH.forge}\n`);
  });

  test("another host gets nothing from lazy (the user's own helper still answers there)", async () => {
    for (const host of ["evil.example", "github.com.evil.example", "gitlab.corp"]) {
      const r = await fill(host);
      for (const p of Object.values(PH)) expect(r.out).not.toContain(p);
      expect(r.out).toContain("password=from-the-user-config");
    }
  });

  test("the git config holds no token: the helper reads it from a variable; the harness's entries survive", async () => {
    const r = await run(["git", "config", "--list", "--show-origin"], env());
    expect(r.code).toBe(0);
    for (const p of Object.values(PH)) expect(r.out).not.toContain(p);
    expect(r.out).toContain("command line:\tsafe.directory=*");
    expect(r.out).toContain("command line:\tuser.email=agent@lazy.invalid");
    expect(r.out).toContain("command line:\tcredential.https://github.com.usehttppath=false");
  });

  test("merge renumbers: both sides' entries kept, in order", () => {
    const m = Share.merge(
      { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "a.b", GIT_CONFIG_VALUE_0: "1", X: "base" },
      { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "c.d", GIT_CONFIG_VALUE_0: "2", X: "extra" },
    );
    expect(m).toEqual({
      X: "extra",
      GIT_CONFIG_COUNT: "2",
      GIT_CONFIG_KEY_0: "a.b",
      GIT_CONFIG_VALUE_0: "1",
      GIT_CONFIG_KEY_1: "c.d",
      GIT_CONFIG_VALUE_1: "2",
    });
    expect(() => Share.merge({ GIT_CONFIG_COUNT: "2", GIT_CONFIG_KEY_0: "a.b" }, {})).toThrow("GIT_CONFIG_KEY_1 is missing");
  });
});

describe("the other tools", () => {
  test("gh and glab read their variables", () => {
    expect(share.env.GH_TOKEN).toBe(PH.github);
    expect(share.env.GITHUB_TOKEN).toBe(PH.github);
    expect(share.env.GH_HOST).toBeUndefined();
    expect(share.env.GITLAB_TOKEN).toBe(PH.gitlab);
    expect(share.env.GITLAB_HOST).toBe("https://gitlab.corp:8443");
  });

  test("npm sends the placeholder to the scope's registry, and the scope resolves there", async () => {
    const before = seen.length;
    const r = await run(["npm", "view", "@acme/widget", "--json"], env());
    expect(r.code).not.toBe(0); // the registry answers 404: what matters is what it received
    const got = seen.slice(before);
    expect(got.length).toBeGreaterThan(0);
    expect(got[0]!.path).toMatch(/^\/npm\/@acme(%2f|\/)widget$/i);
    expect(got[0]!.auth).toBe(`Bearer ${PH.npm}`);
    expect(share.env.NPM_CONFIG_USERCONFIG).toBe(join(mount, "npmrc"));
  });

  test("pip sends the placeholder to the index (PIP_INDEX_URL)", async () => {
    const before = seen.length;
    const r = await run(["python3", "-m", "pip", "download", "--no-deps", "-d", join(root, "dl"), "acme-widget"], env());
    expect(r.code).not.toBe(0);
    const got = seen.slice(before);
    expect(got.map((g) => g.path)).toContain("/simple/acme-widget/");
    expect(got[0]!.auth).toBe(`Basic ${Buffer.from(`__token__:${PH.pypi}`).toString("base64")}`);
  });

  test("docker's config names the registry with the placeholder", async () => {
    expect(share.env.DOCKER_CONFIG).toBe(join(mount, "docker"));
    const cfg = await Bun.file(join(mount, "docker", "config.json")).json();
    expect(Buffer.from(cfg.auths["ghcr.io"].auth, "base64").toString()).toBe(`me:${PH.oci}`);
  });

  test("every trust-store variable names the bundle", () => {
    for (const v of ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "GIT_SSL_CAINFO", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE"])
      expect(share.env[v]).toBe("/lazy/ca/bundle.pem");
  });
});

describe("nothing but placeholders", () => {
  test("every token-shaped value in the environment and the files is one of the placeholders given", () => {
    const text = [...Object.entries(share.env).map(([k, v]) => `${k}=${v}`), ...share.files.map((f) => f.content)].join("\n");
    const decoded = `${text}\n${[...text.matchAll(/[A-Za-z0-9+/]{20,}={0,2}/g)].map((m) => Buffer.from(m[0], "base64").toString("latin1")).join("\n")}`;
    const shaped = [...decoded.matchAll(/(?:ghp_|gho_|ghs_|github_pat_|glpat-|npm_|pypi-|lazy-svc-)[A-Za-z0-9_-]+/g)].map((m) => m[0]);
    expect(shaped.length).toBeGreaterThan(0);
    for (const s of shaped) expect(Object.values(PH)).toContain(s);
    // A service with no placeholder got nothing: no GHE host, no enterprise token.
    expect(text).not.toContain("ghe.corp");
    expect(share.env.GH_ENTERPRISE_TOKEN).toBeUndefined();
  });

  test("no services, no share; a placeholder that is not lazy's spelling is refused", () => {
    expect(Share.containerShare([], new Map(), { caPath: "/x", mount: "/m" })).toEqual({ env: {}, files: [] });
    const bad = svc({ name: "npm", shape: "npm", url: "https://registry.npmjs.org/" });
    expect(() => Share.containerShare([bad], new Map([["npm", "x\nregistry=https://evil/"]]), { caPath: "/x", mount: "/m" })).toThrow(
      "not [A-Za-z0-9_-]",
    );
  });
});
