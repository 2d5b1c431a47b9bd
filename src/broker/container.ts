/**
 * What a task's container gets so that git, gh, glab, npm, pip and docker use a brokered
 * service unchanged: placeholders, never a secret, in the places those tools look. git reads a
 * credential helper from GIT_CONFIG_* variables (never a file in the repository, which the agent
 * could rewrite and lazy accept would merge), and the helper reads the placeholder from a
 * variable, so `git config -l` shows no token-shaped value at all. The files (npmrc, docker's
 * config.json) are written by the daemon into a read-only mount; the CA variables point every
 * tool at the bundle that trusts the broker's certificate.
 */
import type { Service } from "./types";

export interface ShareFile {
  /** Relative to the mount; the environment names `<mount>/<name>`. */
  name: string;
  content: string;
  mode: number;
}
export interface Share {
  env: Record<string, string>;
  files: ShareFile[];
}
export interface ShareOptions {
  /** The CA bundle in the container: the public roots plus the project's CA. */
  caPath: string;
  /** Where the files are mounted in the container (read-only). */
  mount: string;
}

/** The variables tools read their trust store from, each pointed at the full bundle. */
export const CA_VARIABLES = [
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "GIT_SSL_CAINFO",
  "REQUESTS_CA_BUNDLE",
  "PIP_CERT",
  "CURL_CA_BUNDLE",
] as const;

const PLACEHOLDER = /^[A-Za-z0-9_-]{8,200}$/;

/**
 * The container's share of the brokered services: environment and files, placeholders only.
 * A service with no placeholder gets nothing. Compose the environment with others through merge
 * (GIT_CONFIG_* entries are numbered: a plain object spread would drop some).
 */
export function containerShare(services: Service[], placeholders: Map<string, string>, opts: ShareOptions): Share {
  const env: Record<string, string> = {};
  const git: [string, string][] = [];
  const npmrc: string[] = [];
  const auths: Record<string, { auth: string }> = {};
  const pip: string[] = [];
  const used = new Set<string>();
  const given = services.flatMap((s) => {
    const p = placeholders.get(s.name);
    if (p === undefined) return [];
    // Written into URLs, npmrc lines and JSON: a placeholder is lazy's own spelling, checked here.
    if (!PLACEHOLDER.test(p)) throw new Error(`broker: the placeholder for service ${s.name} is not [A-Za-z0-9_-]{8,200}`);
    return [{ s, p }];
  });
  for (const { s, p } of given) {
    const url = new URL(s.url);
    const host = url.host.toLowerCase(); // URL drops :443 on https
    // Every service's placeholder in a variable of its name: a script or a tool lazy does not
    // configure (curl -H "Authorization: Bearer $LAZY_BROKER_X") uses it as it would the token.
    let name = `LAZY_BROKER_${s.name.toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;
    for (let i = 2; used.has(name); i++) name = `${name}_${i}`;
    used.add(name);
    env[name] = p;
    if (s.shape === "github" || s.shape === "gitlab" || (s.shape === "custom" && s.auth.kind === "basic")) {
      env[`${name}_USER`] = gitUser(s);
      // The helper answers `get` only (store and erase are no-ops: nothing to keep), reads stdin
      // to its end as git expects, and takes both values from the environment: nothing from
      // lazy.toml is ever spelled into the shell text.
      const helper = `!f() { cat >/dev/null; test "$1" = get || return 0; printf 'username=%s\\npassword=%s\\n' "$${name}_USER" "$${name}"; }; f`;
      for (const h of new Set([host, ...s.hosts.map((x) => x.toLowerCase().replace(/:443$/, ""))])) {
        // The empty helper first: it drops every helper a config file named for this host, so
        // only lazy's answers (and no keychain or store helper) reach the broker.
        git.push(
          [`credential.https://${h}.helper`, ""],
          [`credential.https://${h}.helper`, helper],
          [`credential.https://${h}.useHttpPath`, "false"],
        );
      }
    }
    if (s.shape === "github") {
      if (host === "github.com" || host.endsWith(".ghe.com")) {
        env.GH_TOKEN = p;
        env.GITHUB_TOKEN = p;
      } else {
        // gh reads a GitHub Enterprise Server token from its own variables, for GH_HOST.
        env.GH_HOST ??= host;
        env.GH_ENTERPRISE_TOKEN ??= p;
        env.GITHUB_ENTERPRISE_TOKEN ??= p;
      }
    }
    if (s.shape === "gitlab") {
      env.GITLAB_TOKEN ??= p;
      if (host !== "gitlab.com") env.GITLAB_HOST ??= `https://${host}`;
    }
    if (s.shape === "npm") npmrc.push(...npmLines(s, url, p));
    if (s.shape === "pypi") {
      const u = new URL(url);
      u.username = s.auth.kind === "basic" ? s.auth.user : "__token__";
      u.password = p;
      pip.push(u.href);
    }
    if (s.shape === "oci") {
      const user = s.auth.kind === "basic" ? s.auth.user : "lazy";
      const auth = Buffer.from(`${user}:${p}`).toString("base64");
      for (const h of new Set([host, ...s.hosts.filter((x) => !x.includes("*"))])) auths[dockerKey(h)] = { auth };
    }
  }
  const files: ShareFile[] = [];
  const at = (name: string) => `${opts.mount.replace(/\/+$/, "")}/${name}`;
  if (npmrc.length) {
    files.push({ name: "npmrc", content: `${npmrc.join("\n")}\n`, mode: 0o444 });
    env.NPM_CONFIG_USERCONFIG = at("npmrc");
  }
  if (pip.length) {
    // The environment, not a pip.conf: pip ranks PIP_* variables above every config file (the
    // image's, the user's, a virtualenv's), so no file the agent can write redirects the index.
    env.PIP_INDEX_URL = pip[0]!;
    if (pip.length > 1) env.PIP_EXTRA_INDEX_URL = pip.slice(1).join(" ");
  }
  if (Object.keys(auths).length) {
    files.push({ name: "docker/config.json", content: `${JSON.stringify({ auths }, null, 2)}\n`, mode: 0o444 });
    env.DOCKER_CONFIG = at("docker");
  }
  if (given.length) for (const v of CA_VARIABLES) env[v] = opts.caPath;
  return { env: withGitConfig(env, git), files };
}

/** The user name git sends with the placeholder: the forge's convention for a token. */
function gitUser(s: Service): string {
  if (s.auth.kind === "basic") return s.auth.user;
  return s.shape === "gitlab" ? "oauth2" : "x-access-token";
}

/** The npmrc lines of one registry: where its scopes (or, with none, everything) resolve, and its token. */
function npmLines(s: Service, url: URL, p: string): string[] {
  const registry = url.href.endsWith("/") ? url.href : `${url.href}/`;
  const lines = s.scopes.length
    ? s.scopes.map((sc) => `${sc.startsWith("@") ? sc : `@${sc}`}:registry=${registry}`)
    : [`registry=${registry}`];
  // npm's "nerf dart": the registry URL without its scheme, to the last slash.
  const dart = `//${url.host}${url.pathname.replace(/[^/]*$/, "")}`;
  if (s.auth.kind === "basic") lines.push(`${dart}:username=${s.auth.user}`, `${dart}:_password=${Buffer.from(p).toString("base64")}`);
  else lines.push(`${dart}:_authToken=${p}`);
  return lines;
}

/** docker keys Docker Hub under its old index address; every other registry under its host. */
const dockerKey = (host: string): string =>
  host === "docker.io" || host === "registry-1.docker.io" || host === "index.docker.io" ? "https://index.docker.io/v1/" : host;

/** env with the git config entries appended as GIT_CONFIG_KEY_n/VALUE_n after the ones it has. */
function withGitConfig(env: Record<string, string>, entries: [string, string][]): Record<string, string> {
  if (!entries.length) return env;
  const out = { ...env };
  entries.forEach(([k, v], i) => {
    out[`GIT_CONFIG_KEY_${i}`] = k;
    out[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  out.GIT_CONFIG_COUNT = String(entries.length);
  return out;
}

/** The GIT_CONFIG_KEY_n/VALUE_n entries of an environment, in order (GIT_CONFIG_COUNT of them). */
function gitConfigOf(env: Record<string, string>): [string, string][] {
  const n = Number.parseInt(env.GIT_CONFIG_COUNT ?? "0", 10);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`broker: GIT_CONFIG_COUNT is not a count (${env.GIT_CONFIG_COUNT})`);
  return Array.from({ length: n }, (_, i): [string, string] => {
    const k = env[`GIT_CONFIG_KEY_${i}`];
    if (k === undefined) throw new Error(`broker: GIT_CONFIG_COUNT is ${n} but GIT_CONFIG_KEY_${i} is missing`);
    return [k, env[`GIT_CONFIG_VALUE_${i}`] ?? ""];
  });
}

/**
 * Two environments as one: `extra` wins for a plain variable; the GIT_CONFIG_* entries of both
 * are kept, base's first and extra's renumbered after them (git reads them in order, so extra's
 * credential helpers come after, and override, anything base's entries set for the same key).
 */
export function merge(base: Record<string, string>, extra: Record<string, string>): Record<string, string> {
  const entries = [...gitConfigOf(base), ...gitConfigOf(extra)];
  const plain = (e: Record<string, string>) =>
    Object.fromEntries(Object.entries(e).filter(([k]) => !/^GIT_CONFIG_(COUNT|KEY_\d+|VALUE_\d+)$/.test(k)));
  return withGitConfig({ ...plain(base), ...plain(extra) }, entries);
}
