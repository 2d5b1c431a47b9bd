/**
 * A private git host on loopback, as real as this machine allows: git's own `git http-backend`
 * (smart HTTP, fetch and push) behind nginx and fcgiwrap from Debian, over HTTPS with a CA of
 * the test's own, behind basic auth whose password is a token the test chose. The broker tests
 * prove against it that the real token reached a real server (its access log) while the
 * container held a placeholder, and that the server's refs moved only where lazy allows.
 * Everything (config, repos, logs, sockets) lives in one temp folder; stop() ends both
 * processes' groups and removes it. Needs nginx-light and fcgiwrap (scripts/setup-test-env.sh).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { freePort, serverTls, stopGroup, waitForPort, withPortRetry } from "./local-servers";

export interface RepoSpec {
  /** Path in the repository → content, committed on `main`. */
  files: Record<string, string>;
  /** "owner/name" of another repo on this host, added as a submodule at path `name` by its https URL. */
  submodule?: string;
}

export interface GitHost {
  port: number;
  /** The DNS name the certificate is for (the test maps it to 127.0.0.1). */
  name: string;
  caPem: string;
  caFile: string;
  /** https://NAME:PORT/owner/repo.git */
  url(repo: string): string;
  /** The access log, each Basic Authorization header also decoded as `basic="user:password"`. */
  log(): string;
  /** refname → object id of the bare repository, as the server holds it now. */
  refs(repo: string): Record<string, string>;
  /** The bare repository's folder (for a test that inspects it with git). */
  path(repo: string): string;
  stop(): Promise<void>;
}

const HTTP_BACKEND = "/usr/lib/git-core/git-http-backend";
const START_MS = 10_000;

function git(cwd: string, args: string[], env: Record<string, string> = {}): string {
  const r = Bun.spawnSync(["git", ...args], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "Lazy Test",
      GIT_AUTHOR_EMAIL: "test@lazy.test",
      GIT_COMMITTER_NAME: "Lazy Test",
      GIT_COMMITTER_EMAIL: "test@lazy.test",
      ...env,
    },
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} in ${cwd}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

/** Repos without a submodule first, so a submodule's commit exists when its parent records it. */
function order(repos: Record<string, RepoSpec>): string[] {
  const names = Object.keys(repos);
  for (const [n, s] of Object.entries(repos)) {
    if (!/^[\w.-]+\/[\w.-]+$/.test(n)) throw new Error(`repo name ${n}: expected owner/name`);
    if (s.submodule && !repos[s.submodule]) throw new Error(`${n}: submodule ${s.submodule} is not among the repos`);
    if (s.submodule && repos[s.submodule]?.submodule) throw new Error(`${n}: a submodule with a submodule is not supported`);
  }
  return [...names.filter((n) => !repos[n]!.submodule), ...names.filter((n) => repos[n]!.submodule)];
}

export interface GitHostOptions {
  /** The DNS name of its certificate and URLs; default git.lazy.test. */
  name?: string;
  /** The password basic auth takes (a PAT-shaped `ghp_…` in the tests). */
  token: string;
  repos: Record<string, RepoSpec>;
  /** The one user name the host takes; without it any name goes, as on GitHub. */
  user?: string;
  /** More passwords the host takes besides `token` (tokens a fake API mints), without `user` only. */
  more?: string[];
}

export function startGitHost(opts: GitHostOptions): Promise<GitHost> {
  return withPortRetry(() => startOnce(opts));
}

async function startOnce(opts: GitHostOptions): Promise<GitHost> {
  const name = opts.name ?? "git.lazy.test";
  const dir = mkdtempSync(join(tmpdir(), "lazy-git-host-"));
  const root = join(dir, "repos");
  const port = freePort();
  const url = (repo: string) => `https://${name}:${port}/${repo}.git`;
  const path = (repo: string) => join(root, `${repo}.git`);
  let nginx: ReturnType<typeof Bun.spawn> | undefined;
  let fcgi: ReturnType<typeof Bun.spawn> | undefined;
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      await Promise.all([nginx && stopGroup(nginx), fcgi && stopGroup(fcgi)]);
      rmSync(dir, { recursive: true, force: true });
    })());
  try {
    const tls = serverTls(dir, name);

    // The repositories: made with real git, each a bare repo with one commit on main.
    const heads: Record<string, string> = {};
    for (const repo of order(opts.repos)) {
      const spec = opts.repos[repo]!;
      const work = join(dir, "work", repo);
      mkdirSync(work, { recursive: true });
      git(work, ["init", "-q", "-b", "main"]);
      for (const [file, content] of Object.entries(spec.files)) {
        mkdirSync(dirname(join(work, file)), { recursive: true });
        writeFileSync(join(work, file), content);
      }
      git(work, ["add", "-A"]);
      if (spec.submodule) {
        const sub = spec.submodule.split("/")[1]!;
        writeFileSync(join(work, ".gitmodules"), `[submodule "${sub}"]\n\tpath = ${sub}\n\turl = ${url(spec.submodule)}\n`);
        git(work, ["add", ".gitmodules"]);
        git(work, ["update-index", "--add", "--cacheinfo", `160000,${heads[spec.submodule]},${sub}`]);
      }
      git(work, ["commit", "-q", "-m", `${repo}: first commit`]);
      heads[repo] = git(work, ["rev-parse", "HEAD"]).trim();
      mkdirSync(path(repo), { recursive: true });
      git(path(repo), ["init", "-q", "--bare", "-b", "main"]);
      git(path(repo), ["config", "http.receivepack", "true"]);
      git(work, ["push", "-q", path(repo), "main"]);
    }

    // Basic auth, the token the password. With `user`: nginx's auth_basic and an htpasswd for
    // that one user. Without: any user name, as GitHub takes a token, checked by a CGI script
    // behind nginx's auth_request (auth_basic cannot ignore the name).
    let auth: string;
    if (opts.user) {
      if (opts.more?.length) throw new Error("startGitHost: more tokens are taken without a user only");
      const hash = Bun.spawnSync(["openssl", "passwd", "-apr1", "-stdin"], {
        stdin: Buffer.from(`${opts.token}\n`),
        stdout: "pipe",
        stderr: "pipe",
      });
      if (hash.exitCode !== 0) throw new Error(`openssl passwd: ${hash.stderr.toString()}`);
      writeFileSync(join(dir, "htpasswd"), `${opts.user}:${hash.stdout.toString().trim()}\n`, { mode: 0o600 });
      auth = `auth_basic "lazy test git host"; auth_basic_user_file ${dir}/htpasswd;`;
    } else {
      // One token a line; a password matches a whole line, compared as a string (never a pattern).
      const tokens = [opts.token, ...(opts.more ?? [])];
      if (tokens.some((t) => !/^[\x21-\x7e]+$/.test(t))) throw new Error("a git host token is printable ASCII without spaces");
      writeFileSync(join(dir, "token"), `${tokens.join("\n")}\n`, { mode: 0o600 });
      writeFileSync(
        join(dir, "auth.sh"),
        `#!/bin/sh
b64=\${HTTP_AUTHORIZATION#Basic }
cred=$(printf '%s' "$b64" | /usr/bin/base64 -d 2>/dev/null)
ok=
if [ "$b64" != "$HTTP_AUTHORIZATION" ] && [ "\${cred%%:*}" != "$cred" ]; then
  while IFS= read -r t; do [ "\${cred#*:}" = "$t" ] && ok=1; done < '${dir}/token'
fi
if [ -n "$ok" ]; then
  printf 'Status: 204 No Content\\r\\n\\r\\n'
else
  printf 'Status: 401 Unauthorized\\r\\nWWW-Authenticate: Basic realm="lazy test git host"\\r\\n\\r\\n'
fi
`,
        { mode: 0o700 },
      );
      auth = "auth_request /lazy-test-auth;";
    }

    for (const t of ["body", "fastcgi", "proxy", "uwsgi", "scgi"]) mkdirSync(join(dir, "tmp", t), { recursive: true });
    const sock = join(dir, "fcgi.sock");
    // As root nginx's workers would drop to nobody, who cannot read the repos: keep this user.
    const runAs = process.getuid?.() === 0 ? "user root;" : "";
    writeFileSync(
      join(dir, "nginx.conf"),
      `${runAs}
worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log info;
events { worker_connections 256; }
http {
  log_format lazy '$remote_addr "$request" $status $body_bytes_sent sni="$ssl_server_name" host="$http_host" user="$remote_user" authorization="$http_authorization"';
  access_log ${dir}/access.log lazy;
  client_body_temp_path ${dir}/tmp/body; fastcgi_temp_path ${dir}/tmp/fastcgi; proxy_temp_path ${dir}/tmp/proxy;
  uwsgi_temp_path ${dir}/tmp/uwsgi; scgi_temp_path ${dir}/tmp/scgi;
  client_max_body_size 0;
  server {
    listen 127.0.0.1:${port} ssl;
    server_name ${name};
    ssl_certificate ${tls.certFile}; ssl_certificate_key ${tls.keyFile};
    location / {
      ${auth}
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME ${HTTP_BACKEND};
      fastcgi_param GIT_PROJECT_ROOT ${root};
      fastcgi_param GIT_HTTP_EXPORT_ALL "";
      fastcgi_param PATH_INFO $uri;
      fastcgi_param REMOTE_USER $remote_user;
      fastcgi_param HOME ${dir};
      fastcgi_buffering off;
      fastcgi_request_buffering off;
      fastcgi_pass unix:${sock};
    }
    location = /lazy-test-auth {
      internal;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME ${dir}/auth.sh;
      fastcgi_pass_request_body off;
      fastcgi_param CONTENT_LENGTH "";
      fastcgi_pass unix:${sock};
    }
  }
}
`,
    );
    fcgi = Bun.spawn(["setsid", "fcgiwrap", "-c", "4", "-s", `unix:${sock}`], {
      stdout: "ignore",
      stderr: Bun.file(join(dir, "fcgiwrap.log")),
    });
    const until = Date.now() + START_MS;
    while (!existsSync(sock) && Date.now() < until) await Bun.sleep(20);
    if (!existsSync(sock))
      throw new Error(`fcgiwrap made no socket at ${sock} within ${START_MS} ms: is fcgiwrap installed (bash scripts/setup-test-env.sh)?`);
    nginx = Bun.spawn(["setsid", "nginx", "-e", join(dir, "error.log"), "-p", dir, "-c", join(dir, "nginx.conf")], {
      stdout: "ignore",
      stderr: Bun.file(join(dir, "nginx.stderr")),
    });
    const errors = () =>
      ["nginx.stderr", "error.log"].map((f) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), "utf8") : "")).join("\n");
    // nginx writes its pid file only after it has bound its port.
    await waitForPort(port, "nginx (the git host)", START_MS, errors, nginx, () => existsSync(join(dir, "nginx.pid")));

    return {
      port,
      name,
      caPem: tls.caPem,
      caFile: tls.caFile,
      url,
      path,
      log: () => {
        const text = existsSync(join(dir, "access.log")) ? readFileSync(join(dir, "access.log"), "utf8") : "";
        return text.replace(
          /authorization="Basic ([A-Za-z0-9+/=]+)"/g,
          (m, b64: string) => `${m} basic="${Buffer.from(b64, "base64").toString("utf8")}"`,
        );
      },
      refs: (repo) => {
        const out = git(path(repo), ["for-each-ref", "--format=%(refname) %(objectname)"]);
        return Object.fromEntries(
          out
            .trim()
            .split("\n")
            .filter(Boolean)
            .map((l) => l.split(" ") as [string, string]),
        );
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
