/**
 * A private npm registry on loopback: verdaccio from npm (pinned, installed once by
 * scripts/setup-test-env.sh into $LAZY_TEST_VERDACCIO, default /opt/lazy-test-verdaccio), with a
 * config of the test's own: HTTPS with a CA the test made for `npm.lazy.test`, no uplinks
 * (nothing leaves the machine), `@acme/*` readable and publishable only by an authenticated
 * user, one user in its htpasswd and the token `npm login` gets for it. `@acme/private-lib` is
 * published as that user before the registry is handed out, so the broker tests can prove that
 * `npm install` of a private scoped package works with the token and fails without it.
 * Everything lives in one temp folder; stop() ends verdaccio's group and removes it.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, serverTls, stopGroup, waitForPort, withPortRetry } from "./local-servers";

export const VERDACCIO_DIR = process.env.LAZY_TEST_VERDACCIO ?? "/opt/lazy-test-verdaccio";
const VERDACCIO_BIN = join(VERDACCIO_DIR, "node_modules", "verdaccio", "bin", "verdaccio");
const START_MS = 30_000;

export interface Registry {
  port: number;
  /** The DNS name the certificate is for (the test maps it to 127.0.0.1). */
  name: string;
  caFile: string;
  caPem: string;
  /** https://NAME:PORT/ (what a client behind the broker is told). */
  url: string;
  /** https://127.0.0.1:PORT/ (what a host client without a resolver uses; the certificate names it too). */
  directUrl: string;
  /** The user's npm token (what `npm login` stores as `_authToken`). */
  token: string;
  user: string;
  /** The package published before start returned, and its version. */
  pkg: { name: string; version: string };
  /** verdaccio's own log, written as it happens: one JSON line an event, a request's with the user it authenticated. */
  log(): string;
  /**
   * An .npmrc for `url` (or `directUrl`) with this registry's CA and, when `token` is given, the
   * token for its host: the file's path. Everything else npm would read stays out of it.
   */
  npmrc(opts: { token?: string; direct?: boolean }): string;
  stop(): Promise<void>;
}

/** Host clients must not inherit the machine's npm settings (proxies, another registry's token). */
export function npmEnv(userconfig: string, home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^npm_config_|_proxy$/i.test(k)) env[k] = v;
  return {
    ...env,
    HOME: home,
    NPM_CONFIG_USERCONFIG: userconfig,
    NPM_CONFIG_GLOBALCONFIG: "/dev/null",
    NPM_CONFIG_UPDATE_NOTIFIER: "false",
    NPM_CONFIG_AUDIT: "false",
    NPM_CONFIG_FUND: "false",
  };
}

export interface RegistryOptions {
  /** The DNS name of its certificate and URL; default npm.lazy.test. */
  name?: string;
  /** The user that publishes @acme/private-lib and whose token `token` is; default acme-dev. */
  user?: string;
  password?: string;
}

export function startRegistry(opts: RegistryOptions = {}): Promise<Registry> {
  return withPortRetry(() => startOnce(opts));
}

async function startOnce(opts: RegistryOptions): Promise<Registry> {
  if (!existsSync(VERDACCIO_BIN))
    throw new Error(
      `verdaccio is not installed at ${VERDACCIO_DIR}: run bash scripts/setup-test-env.sh (or point LAZY_TEST_VERDACCIO at a folder with node_modules/verdaccio).`,
    );
  const name = opts.name ?? "npm.lazy.test";
  const user = opts.user ?? "acme-dev";
  const password = opts.password ?? `pw-${crypto.randomUUID()}`;
  const dir = mkdtempSync(join(tmpdir(), "lazy-registry-"));
  const port = freePort();
  const url = `https://${name}:${port}/`;
  const directUrl = `https://127.0.0.1:${port}/`;
  const logFile = join(dir, "verdaccio.log");
  let proc: ReturnType<typeof Bun.spawn> | undefined;
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      if (proc) await stopGroup(proc);
      rmSync(dir, { recursive: true, force: true });
    })());
  try {
    const tls = serverTls(dir, name);
    writeFileSync(
      join(dir, "htpasswd"),
      `${user}:${await Bun.password.hash(password, { algorithm: "bcrypt", cost: 4 })}:autocreated ${new Date().toISOString()}\n`,
      { mode: 0o600 },
    );
    writeFileSync(
      join(dir, "config.yaml"),
      `storage: ${dir}/storage
auth:
  htpasswd:
    file: ${dir}/htpasswd
    max_users: -1
uplinks: {}
packages:
  '@acme/*':
    access: $authenticated
    publish: $authenticated
    unpublish: $authenticated
  '**':
    access: $all
    publish: $authenticated
    unpublish: $authenticated
listen: https://127.0.0.1:${port}
https:
  key: ${tls.keyFile}
  cert: ${tls.certFile}
  ca: ${tls.caFile}
web:
  enable: false
server:
  keepAliveTimeout: 60
log: { type: stdout, format: json, level: http, sync: true }
`,
    );
    mkdirSync(join(dir, "home"));
    proc = Bun.spawn(["setsid", "node", VERDACCIO_BIN, "-c", join(dir, "config.yaml")], {
      cwd: dir,
      env: { ...npmEnv(join(dir, "none"), join(dir, "home")), NO_COLOR: "1", FORCE_COLOR: "0" },
      stdout: Bun.file(logFile),
      stderr: Bun.file(join(dir, "verdaccio.stderr")),
    });
    const output = () =>
      ["verdaccio.log", "verdaccio.stderr"].map((f) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), "utf8") : "")).join("\n");
    // verdaccio logs its address once it has bound it.
    await waitForPort(port, "verdaccio", START_MS, output, proc, () => output().includes(`https://127.0.0.1:${port}/`));

    // The token `npm login` gets: the CouchDB user route, as npm calls it for an existing user
    // (basic auth with the same name; without it verdaccio takes the call for a registration).
    const login = await fetch(`${directUrl}-/user/org.couchdb.user:${encodeURIComponent(user)}`, {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` },
      body: JSON.stringify({ _id: `org.couchdb.user:${user}`, name: user, password, type: "user", roles: [] }),
      tls: { ca: tls.caPem },
    });
    const body = (await login.json()) as { token?: string };
    if (!login.ok || !body.token) throw new Error(`verdaccio login as ${user}: ${login.status} ${JSON.stringify(body)}\n${output()}`);
    const token = body.token;

    const npmrc = (o: { token?: string; direct?: boolean }) => {
      const base = o.direct ? directUrl : url;
      const file = join(dir, `npmrc-${crypto.randomUUID()}`);
      const hostPath = base.replace(/^https:/, "");
      writeFileSync(
        file,
        `registry=${base}\ncafile=${tls.caFile}\nstrict-ssl=true\n${o.token ? `${hostPath}:_authToken=${o.token}\n` : ""}`,
        { mode: 0o600 },
      );
      return file;
    };

    // @acme/private-lib, published by the user with real npm.
    const pkg = { name: "@acme/private-lib", version: "1.0.0" };
    const src = join(dir, "private-lib");
    mkdirSync(src);
    writeFileSync(
      join(src, "package.json"),
      JSON.stringify({ name: pkg.name, version: pkg.version, main: "index.js", license: "UNLICENSED" }, null, 2),
    );
    writeFileSync(join(src, "index.js"), 'module.exports = "acme private lib";\n');
    const pub = Bun.spawnSync(["npm", "publish", "--access", "restricted"], {
      cwd: src,
      env: npmEnv(npmrc({ token, direct: true }), join(dir, "home")),
      stdout: "pipe",
      stderr: "pipe",
      timeout: 60_000,
    });
    if (pub.exitCode !== 0) throw new Error(`npm publish ${pkg.name} to verdaccio: ${pub.stderr.toString()}\n${output()}`);

    return {
      port,
      name,
      caFile: tls.caFile,
      caPem: tls.caPem,
      url,
      directUrl,
      token,
      user,
      pkg,
      log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
      npmrc,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
