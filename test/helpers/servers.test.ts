/**
 * The real servers the broker's proofs run against are real: the git host (nginx + fcgiwrap +
 * git http-backend over HTTPS with basic auth) and the npm registry (verdaccio with token auth),
 * driven here by the host's own git, curl and npm. If these pass, a broker test that sees the
 * token in the git host's log or a private package installed has proven it against the real
 * protocols, not against a fixture that lets anything through.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type GitHost, startGitHost } from "./git-https";
import { listening } from "./local-servers";
import { npmEnv, type Registry, startRegistry } from "./verdaccio";

const TOKEN = `ghp_${Array.from(crypto.getRandomValues(new Uint8Array(36)), (b) => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[b % 62]).join("")}`;
const WRONG = `ghp_${"w".repeat(36)}`;
const MORE = `ghs_${"m".repeat(36)}`;
const CLIENT_MS = 60_000;

let git: GitHost;
let npm: Registry;
const scratch = mkdtempSync(join(tmpdir(), "lazy-servers-test-"));

async function run(argv: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) {
  const p = Bun.spawn(argv, {
    cwd: opts.cwd ?? scratch,
    env: opts.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: CLIENT_MS,
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

/** The host's git, told the test CA and where git.lazy.test is, with no other config or proxy. */
function gitEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^GIT_|_proxy$/i.test(k)) env[k] = v;
  return {
    ...env,
    HOME: scratch,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_SSL_CAINFO: git.caFile,
    GIT_AUTHOR_NAME: "t",
    GIT_AUTHOR_EMAIL: "t@lazy.test",
    GIT_COMMITTER_NAME: "t",
    GIT_COMMITTER_EMAIL: "t@lazy.test",
  };
}
const resolveArgs = () => ["-c", `http.curloptResolve=${git.name}:${git.port}:127.0.0.1`];
/** A credential helper answering `token` (or none at all). */
const credArgs = (token?: string) => [
  "-c",
  "credential.helper=",
  ...(token ? ["-c", `credential.helper=!f() { echo username=x-access-token; echo password=${token}; }; f`] : []),
];

beforeAll(async () => {
  [git, npm] = await Promise.all([
    startGitHost({
      token: TOKEN,
      more: [MORE],
      repos: {
        "owner/app": { files: { "README.md": "the app\n", "src/main.ts": "export {};\n" }, submodule: "owner/lib" },
        "owner/lib": { files: { "lib.txt": "private lib\n" } },
      },
    }),
    startRegistry(),
  ]);
}, 90_000);

afterAll(async () => {
  await Promise.all([git?.stop(), npm?.stop()]);
  rmSync(scratch, { recursive: true, force: true });
});

describe("the git host", () => {
  test(
    "a recursive clone with the real token fetches the app and its private submodule, and the log shows the token",
    async () => {
      const dest = join(scratch, "clone");
      const r = await run(["git", ...resolveArgs(), ...credArgs(TOKEN), "clone", "--recurse-submodules", git.url("owner/app"), dest], {
        env: gitEnv(),
      });
      expect(r.err).toContain("Submodule 'lib'");
      expect(r.code).toBe(0);
      expect(readFileSync(join(dest, "README.md"), "utf8")).toBe("the app\n");
      expect(readFileSync(join(dest, "lib", "lib.txt"), "utf8")).toBe("private lib\n");
      const log = git.log();
      expect(log).toContain(`basic="x-access-token:${TOKEN}"`);
      expect(log).toMatch(new RegExp(`"POST /owner/lib\\.git/git-upload-pack HTTP/1\\.1" 200 .*sni="${git.name.replaceAll(".", "\\.")}"`));
    },
    CLIENT_MS,
  );

  test(
    "without credentials or with a wrong token git is refused (401), and nothing is cloned",
    async () => {
      for (const [token, dest] of [
        [undefined, "none"],
        [WRONG, "wrong"],
      ] as const) {
        const r = await run(["git", ...resolveArgs(), ...credArgs(token), "clone", git.url("owner/app"), join(scratch, dest)], {
          env: gitEnv(),
        });
        expect(r.code).not.toBe(0);
        expect(r.err).toMatch(token ? /Authentication failed/ : /could not read Username|terminal prompts disabled/);
        expect(existsSync(join(scratch, dest, "README.md"))).toBe(false);
      }
      expect(git.log()).toContain(`basic="x-access-token:${WRONG}"`);
      const refs = `https://${git.name}:${git.port}/owner/app.git/info/refs?service=git-upload-pack`;
      const curl = (auth: string[]) =>
        run([
          "curl",
          "-sS",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "--noproxy",
          "*",
          "--cacert",
          git.caFile,
          "--resolve",
          `${git.name}:${git.port}:127.0.0.1`,
          ...auth,
          refs,
        ]);
      expect((await curl([])).out).toBe("401");
      expect((await curl(["-u", `x-access-token:${WRONG}`])).out).toBe("401");
      expect((await curl(["-u", `x-access-token:${TOKEN}`])).out).toBe("200");
      // Any user name with the token, as GitHub takes it; the token alone as a bearer is not basic auth.
      expect((await curl(["-u", `someone:${TOKEN}`])).out).toBe("200");
      expect((await curl(["-H", `authorization: Bearer ${TOKEN}`])).out).toBe("401");
      // A second token it was started with (a fake API's mint) is taken too; the two joined are not.
      expect((await curl(["-u", `x-access-token:${MORE}`])).out).toBe("200");
      expect((await curl(["-u", `x-access-token:${TOKEN}${MORE}`])).out).toBe("401");
    },
    CLIENT_MS,
  );

  test(
    "a host started with one user name takes the token only with that name",
    async () => {
      const one = await startGitHost({ token: TOKEN, user: "x-access-token", repos: { "owner/one": { files: { a: "a\n" } } } });
      try {
        const refs = `https://${one.name}:${one.port}/owner/one.git/info/refs?service=git-upload-pack`;
        const curl = (user: string) =>
          run([
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--noproxy",
            "*",
            "--cacert",
            one.caFile,
            "--resolve",
            `${one.name}:${one.port}:127.0.0.1`,
            "-u",
            `${user}:${TOKEN}`,
            refs,
          ]);
        expect((await curl("x-access-token")).out).toBe("200");
        expect((await curl("someone")).out).toBe("401");
      } finally {
        await one.stop();
      }
    },
    CLIENT_MS,
  );

  test(
    "a push of a new branch lands in the bare repository",
    async () => {
      const dest = join(scratch, "clone");
      writeFileSync(join(dest, "work.txt"), "done\n");
      expect((await run(["git", "add", "work.txt"], { cwd: dest, env: gitEnv() })).code).toBe(0);
      expect((await run(["git", "commit", "-q", "-m", "work"], { cwd: dest, env: gitEnv() })).code).toBe(0);
      const head = (await run(["git", "rev-parse", "HEAD"], { cwd: dest, env: gitEnv() })).out.trim();
      const before = git.refs("owner/app");
      expect(before["refs/heads/lazy/t1"]).toBeUndefined();
      const r = await run(["git", ...resolveArgs(), ...credArgs(TOKEN), "push", "origin", "HEAD:refs/heads/lazy/t1"], {
        cwd: dest,
        env: gitEnv(),
      });
      expect(r.err).toContain("[new branch]");
      expect(r.code).toBe(0);
      expect(git.refs("owner/app")).toEqual({ ...before, "refs/heads/lazy/t1": head });
      expect(git.log()).toContain('"POST /owner/app.git/git-receive-pack HTTP/1.1" 200');
    },
    CLIENT_MS,
  );
});

describe("the npm registry", () => {
  /** `npm install @acme/private-lib` in a fresh project with `npmrc`: the result and the project folder. */
  async function install(npmrc: string) {
    const dir = mkdtempSync(join(scratch, "npm-"));
    writeFileSync(join(dir, "package.json"), '{"name":"consumer","version":"1.0.0","private":true}');
    return { dir, ...(await run(["npm", "install", "--no-package-lock", npm.pkg.name], { cwd: dir, env: npmEnv(npmrc, dir) })) };
  }

  test(
    "npm install of the private scoped package works with the token",
    async () => {
      const r = await install(npm.npmrc({ token: npm.token, direct: true }));
      expect(r.err).not.toContain("npm error");
      expect(r.code).toBe(0);
      expect(readFileSync(join(r.dir, "node_modules", "@acme", "private-lib", "index.js"), "utf8")).toContain("acme private lib");
      expect(npm.log()).toMatch(/200, user: acme-dev\(127\.0\.0\.1\), req: 'GET \/@acme\/private-lib\/-\/private-lib-1\.0\.0\.tgz'/);
    },
    CLIENT_MS,
  );

  test(
    "without the token, or with another, npm install fails with 401 and installs nothing",
    async () => {
      for (const token of [undefined, "npm_notTheToken0000000000000000000000000"]) {
        const r = await install(npm.npmrc({ token, direct: true }));
        expect(r.code).not.toBe(0);
        expect(r.err).toContain("E401");
        expect(existsSync(join(r.dir, "node_modules", "@acme", "private-lib"))).toBe(false);
      }
    },
    CLIENT_MS,
  );

  test(
    "by its name npm.lazy.test the registry answers with tarball URLs under that name, and only with the token",
    async () => {
      const meta = `https://${npm.name}:${npm.port}/@acme%2fprivate-lib`;
      const curl = (auth: string[]) =>
        run([
          "curl",
          "-sS",
          "--noproxy",
          "*",
          "--cacert",
          npm.caFile,
          "--resolve",
          `${npm.name}:${npm.port}:127.0.0.1`,
          "-w",
          "\n%{http_code}",
          ...auth,
          meta,
        ]);
      const ok = await curl(["-H", `authorization: Bearer ${npm.token}`]);
      expect(ok.out.split("\n").at(-1)).toBe("200");
      const doc = JSON.parse(ok.out.slice(0, ok.out.lastIndexOf("\n"))) as { versions: Record<string, { dist: { tarball: string } }> };
      expect(doc.versions["1.0.0"]?.dist.tarball).toBe(`https://${npm.name}:${npm.port}/@acme/private-lib/-/private-lib-1.0.0.tgz`);
      expect((await curl([])).out.split("\n").at(-1)).toBe("401");
    },
    CLIENT_MS,
  );
});

test("stop() leaves nothing listening", async () => {
  const ports = [git.port, npm.port];
  await Promise.all([git.stop(), npm.stop()]);
  for (const port of ports) {
    expect(await listening(port)).toBe(false);
  }
}, 30_000);
