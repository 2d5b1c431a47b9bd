/**
 * The task image: `[container] image` as is, or built from the project's Dockerfile
 * (`[container] dockerfile`), or lazy's own default, built from the Dockerfile below that
 * ships inside the binary (Debian, git, node, sudo and the npm packages of the harnesses the
 * project's profiles use: Claude Code, Codex, Pi; cursor-agent is never installed).
 * The default's base is a build argument, so it builds from a local base where no registry
 * is reachable. The agent runs as a non-root user with passwordless sudo, so it can install
 * packages in its own container; lazy's binary is mounted at run time, never baked in.
 */
import { createHash } from "node:crypto";
import { existsSync, lstatSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { BuildFiles, DEFAULT_BASE } from "../config";
import { HostNet } from "../network";
import { readRegular } from "../util/bounded-read";
import { LazyError } from "../util/errors";
import { VERSION } from "../version";

export const HARNESS_VERSIONS = { claude: "2.1.197", codex: "0.171.0", pi: "0.73.1" } as const;

/** The node (and npm) lazy's default image installs when its base has no node 22: the npm registry's tarballs, pinned by digest. */
const NODE = {
  version: "22.23.3",
  npm: "10.9.2",
  sha512: {
    x64: "a879f3e6d16c1e88ff58cfae4443558d638d8b9855be6c2b82af00e15efa2a9b95340738fa3c0af31e20c1ba1b13d06d1cd83f00a476e7cdde628acb17f73b9e",
    arm64:
      "9770c01d9adeca5a3ea7d4170edb0eae31b625726a5736179c01a621034e50d01170ca694ced9c99ec1540ffb7ead8c99d213e773a4c36d816f9cde8883bd7b4",
    npm: "8ab88f10f224a0c614cb717a7f7c30499014f77134120e9c1f0211ea3cf3397592cbe483feb38e0c4b3be1c54e347292c76a1b5edb94a3289d5448484ab8ac81",
  },
} as const;

/** The harnesses lazy's default image can install (cursor-agent is not one). */
export type Installable = keyof typeof HARNESS_VERSIONS;
export const INSTALLABLE = Object.keys(HARNESS_VERSIONS) as Installable[];

/**
 * What a first build of lazy's default image costs, measured (bench/first-build.ts, 2 cores, from
 * a bare Debian base, no cache, 2026-12-06): the shared part (apt: git, curl, sudo; node and npm)
 * and each harness's npm install; size in MB as `docker image inspect` gives it, time in seconds.
 * Claude Code alone: 731 MB, 35.5 s; all three: 1325 MB, 53.9 s (codex and pi split by their
 * node_modules). Said before a first build starts (cli/progress.ts), so nobody takes minutes of
 * build for a hang.
 */
export const FIRST_BUILD = {
  shared: { mb: 495, s: 25 },
  claude: { mb: 235, s: 10 },
  codex: { mb: 425, s: 18 },
  pi: { mb: 205, s: 9 },
} as const satisfies Record<"shared" | Installable, { mb: number; s: number }>;

/** The expected size (MB) and time (s) of a first build of the default image with these harnesses. */
export function expectedBuild(harnesses: readonly Installable[]): { mb: number; s: number } {
  const parts = [FIRST_BUILD.shared, ...harnesses.map((h) => FIRST_BUILD[h])];
  return { mb: parts.reduce((n, p) => n + p.mb, 0), s: parts.reduce((n, p) => n + p.s, 0) };
}

/**
 * A step that may be quiet for long (npm fetching a 200 MB native binary) says how far it got
 * every few seconds, so the live build output under lazy's step timer never stands still.
 */
const TICKING = `( while sleep 3; do echo "lazy: $(du -sh /root/.npm 2>/dev/null | cut -f1) fetched so far"; done ) & tick=$!; trap 'kill $tick 2>/dev/null' EXIT`;

export const DEFAULT_DOCKERFILE = `# lazy's default task image. BASE is a build argument so it can come from a local image.
ARG BASE=${DEFAULT_BASE}
FROM \${BASE}
ARG AGENT_UID=1000
ENV DEBIAN_FRONTEND=noninteractive
RUN set -eux; \\
    need=""; \\
    for c in git curl sudo ps; do command -v "$c" >/dev/null 2>&1 || need=yes; done; \\
    if [ -n "$need" ]; then \\
      apt-get update; \\
      apt-get install -y --no-install-recommends ca-certificates curl git sudo procps; \\
      rm -rf /var/lib/apt/lists/*; \\
    fi
# Node ${NODE.version} (Claude Code and Pi want 22; Debian ships older) and npm, from the npm
# registry's own tarballs, checked against pinned digests. Debian's nodejs and npm packages took
# most of a first build's time and ~500 MB of the image.
RUN set -eu; \\
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1 || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then \\
      case "$(uname -m)" in \\
        x86_64) arch=x64; sum=${NODE.sha512.x64};; \\
        aarch64) arch=arm64; sum=${NODE.sha512.arm64};; \\
        *) echo "lazy: no node build for $(uname -m): set [container] base to an image with node 22 and npm" >&2; exit 1;; \\
      esac; \\
      ca=/etc/ssl/certs/ca-certificates.crt; \\
      if [ -n "\${NODE_EXTRA_CA_CERTS:-}" ]; then cat "$ca" "$NODE_EXTRA_CA_CERTS" > /tmp/ca.pem; ca=/tmp/ca.pem; fi; \\
      r=https://registry.npmjs.org; \\
      curl -fL --retry 3 --progress-bar --cacert "$ca" -o /tmp/node.tgz "$r/node-linux-$arch/-/node-linux-$arch-${NODE.version}.tgz"; \\
      echo "$sum  /tmp/node.tgz" | sha512sum -c -; \\
      tar -xzf /tmp/node.tgz -C /usr/local --strip-components=1 package/bin/node; \\
      curl -fL --retry 3 --progress-bar --cacert "$ca" -o /tmp/npm.tgz "$r/npm/-/npm-${NODE.npm}.tgz"; \\
      echo "${NODE.sha512.npm}  /tmp/npm.tgz" | sha512sum -c -; \\
      mkdir -p /usr/local/lib/node_modules/npm; \\
      tar -xzf /tmp/npm.tgz -C /usr/local/lib/node_modules/npm --strip-components=1; \\
      ln -sf ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm; \\
      ln -sf ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx; \\
      rm -f /tmp/node.tgz /tmp/npm.tgz /tmp/ca.pem; \\
    fi; \\
    hash -r; node --version; npm --version
# Only the harnesses the project's profiles use (HARNESSES, part of the image's tag): the shared
# steps above stay in Docker's cache when another set is built.
# npm skips an optional package it failed to fetch without failing: Claude Code's native binary
# is one. Each harness runs once here, so an image without one fails its build, naming it.
ARG HARNESSES="claude codex pi"
ARG CLAUDE_CODE_VERSION=${HARNESS_VERSIONS.claude}
ARG CODEX_VERSION=${HARNESS_VERSIONS.codex}
ARG PI_VERSION=${HARNESS_VERSIONS.pi}
RUN set -eu; \\
    pkgs=""; \\
    for h in $HARNESSES; do case "$h" in \\
      claude) pkgs="$pkgs @anthropic-ai/claude-code@\${CLAUDE_CODE_VERSION}";; \\
      codex) pkgs="$pkgs @openai/codex@\${CODEX_VERSION}";; \\
      pi) pkgs="$pkgs @mariozechner/pi-coding-agent@\${PI_VERSION}";; \\
      *) echo "lazy: no harness $h" >&2; exit 1;; \\
    esac; done; \\
    if [ -n "$pkgs" ]; then \\
      ${TICKING}; \\
      npm install -g --no-audit --no-fund --loglevel=http --foreground-scripts $pkgs; rm -rf /root/.npm; \\
    fi; \\
    for h in $HARNESSES; do "$h" --version >/dev/null || { echo "lazy: $h does not run in this image (npm install above)" >&2; exit 1; }; done
# The agent: a non-root user (the host user's uid, so files it writes are the user's) with
# passwordless sudo for installing packages inside its own container.
RUN set -eux; \\
    if ! getent passwd "\${AGENT_UID}" >/dev/null; then useradd -m -u "\${AGENT_UID}" -s /bin/bash agent; fi; \\
    name="$(getent passwd "\${AGENT_UID}" | cut -d: -f1)"; \\
    echo "$name ALL=(ALL) NOPASSWD:ALL" > /etc/sudoers.d/lazy-agent; chmod 0440 /etc/sudoers.d/lazy-agent; \\
    git config --system safe.directory '*'; \\
    mkdir -p /lazy && chmod 0755 /lazy; \\
    chmod 0711 /root
# (lazy mounts the project and the task's worktree at their host paths; run as root, those sit
# under /root, which the agent must be able to pass through, though not list.)
`;

export type ImagePlan =
  | { kind: "given"; tag: string }
  | {
      kind: "build";
      tag: string;
      dockerfile: string;
      context: string | null;
      buildArgs: Record<string, string>;
      what: string;
      /** lazy's default image only: the harnesses it installs (in its tag) and what its first build costs. */
      harnesses?: readonly Installable[];
      expect?: { mb: number; s: number };
    };

/** The agent's uid: the host user's, or 1000 when lazy runs as root (the agent never is). */
export function agentUid(): number {
  const uid = process.getuid?.() ?? 1000;
  return uid === 0 ? 1000 : uid;
}

/**
 * The image to run tasks from. `harnesses` are those the project's profiles use
 * (config/profiles.ts usedHarnesses): lazy's default image installs only those, and names them
 * in its tag, so adding a codex profile to a Claude-only project builds another image.
 */
export function plan(
  root: string,
  container: { image?: string; dockerfile?: string; base: string },
  harnesses: readonly string[],
): ImagePlan {
  if (container.image) return { kind: "given", tag: container.image };
  const uid = String(agentUid());
  if (container.dockerfile) {
    const file = resolve(root, container.dockerfile);
    if (!existsSync(file))
      throw new LazyError("invalid_input", `[container] dockerfile = "${container.dockerfile}" does not exist (${file}).`);
    const read = readRegular(file, 1024 * 1024);
    if (!("text" in read))
      throw new LazyError("invalid_input", `[container] dockerfile = "${container.dockerfile}" ${read.why} (${file}).`);
    const text = read.text;
    const context = dirname(file);
    if (relative(root, context).startsWith(".."))
      throw new LazyError("invalid_input", `[container] dockerfile must live inside the project (${file}).`);
    const hash = createHash("sha256").update(text).update(uid).digest("hex").slice(0, 12);
    return {
      kind: "build",
      tag: `lazy-project/${slugOf(root)}:${hash}`,
      dockerfile: text,
      context,
      buildArgs: { AGENT_UID: uid },
      what: `the project's ${container.dockerfile}`,
    };
  }
  const base = container.base;
  const set = INSTALLABLE.filter((h) => harnesses.includes(h));
  const list = set.join(" ");
  const hash = createHash("sha256").update(DEFAULT_DOCKERFILE).update(base).update(uid).update(`\0${list}`).digest("hex").slice(0, 12);
  return {
    kind: "build",
    tag: `lazy/agent:${VERSION}-${set.join("-") || "bare"}-${hash}`,
    dockerfile: DEFAULT_DOCKERFILE,
    context: null,
    buildArgs: { BASE: base, AGENT_UID: uid, HARNESSES: list },
    what: `lazy's default image (FROM ${base}; ${set.length ? `harnesses: ${set.join(", ")}` : "no harness"})`,
    harnesses: set,
    expect: expectedBuild(set),
  };
}

const slugOf = (root: string) =>
  root
    .split("/")
    .filter(Boolean)
    .at(-1)!
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .slice(0, 40) || "project";

/** The most a Dockerfile's build context may hold: it is read into memory and sent whole. */
export const CONTEXT_MAX_BYTES = BuildFiles.CONTEXT_MAX_BYTES;

/**
 * The build context of a project Dockerfile: the files under its folder that git tracks or
 * would track (untracked, not ignored), as the agent's worktree has them. Ignored files stay
 * out: a `.env`, a key file or `node_modules` in the checkout is no business of an image the
 * agent runs in. Symlinks and submodules are left out; an executable keeps its mode. A
 * Dockerfile that copies nothing from its context gets none (config/build-files.ts: only what
 * lazy trust recorded goes in; `copies` says it of the person's Dockerfile, before lazy's CA
 * steps). `read` is what was read, for the trust check of those bytes.
 */
export async function contextOf(
  root: string,
  dir: string,
  dockerfile: string,
  copies = copiesContext(dockerfile),
): Promise<{ files: Record<string, Uint8Array | string>; executable: Set<string>; read: BuildFiles.ContextFile[] }> {
  const files: Record<string, Uint8Array | string> = {};
  const executable = new Set<string>();
  const read = copies ? await BuildFiles.readContext(root, dir) : [];
  for (const f of read) {
    files[f.name] = f.bytes;
    if (f.executable) executable.add(f.name);
  }
  files.Dockerfile = dockerfile;
  executable.delete("Dockerfile");
  return { files, executable, read };
}

/** Whether a Dockerfile takes files from its build context (a COPY or ADD not from another stage). */
export const copiesContext = BuildFiles.copiesContext;

/**
 * A stamp of the build context as it is now: each file's path, size, mode and modification time
 * (no content read). An image built from another stamp was built from other files: the launch
 * builds it again (Docker's own cache keeps the steps whose files did not change). Whether
 * those files may be built is the trust record's say (config/build-files.ts: their contents).
 */
export async function contextStamp(root: string, dir: string): Promise<string> {
  const h = createHash("sha256");
  for (const path of await BuildFiles.contextPaths(root, dir)) {
    const st = lstatSync(join(root, path), { throwIfNoEntry: false });
    // As contextOf takes them: regular files only.
    if (!st?.isFile()) continue;
    h.update(`${path}\0${st.size}\0${st.mode & 0o111 ? "x" : "-"}\0${st.mtimeMs}\n`);
  }
  return h.digest("hex").slice(0, 16);
}

/**
 * What a build said, kept to explain its failure: the step it was on and the last lines, so
 * the error names the failing command and shows its own error line (npm's `ERR!`, apt's
 * `E:`), not only Docker's "returned a non-zero code".
 */
export class BuildLog {
  private step = "";
  private tail: string[] = [];
  private static readonly KEEP = 60;
  /** Lines a tool prints when it fails, most telling first. */
  private static readonly TELLING = [/npm (ERR!|error)/, /^E: /, /\berror\b/i, /not found|no such file|permission denied/i];

  /** The build's args, to name the base a `FROM ${BASE}` pulls. */
  constructor(private args: Record<string, string> = {}) {}

  add(line: string): void {
    if (/^Step \d+\/\d+ : /.test(line)) {
      this.step = line;
      this.tail = [];
      return;
    }
    this.tail.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
    if (this.tail.length > BuildLog.KEEP) this.tail.shift();
  }

  failure(tag: string, error: string): LazyError {
    const lines = this.tail.filter((l) => l.trim() !== error.trim() && !/^ ---> |^Removing intermediate/.test(l));
    let telling: string | undefined;
    for (const re of BuildLog.TELLING) {
      telling = lines.findLast((l) => re.test(l));
      if (telling) break;
    }
    const pull = pullFailure(
      this.step.replace(/\$\{?(\w+)\}?/g, (m, k: string) => this.args[k] ?? m),
      error,
    );
    if (pull) return pull;
    const step = this.step.replace(/^Step (\d+\/\d+) : /, "step $1 (") + (this.step ? ")" : "");
    const where = step ? ` at ${step.length > 160 ? `${step.slice(0, 160)}…)` : step}` : "";
    const why = telling ? `${telling.trim()} — ${error.trim()}` : error.trim();
    // A COPY of a file the context lacks: most likely one git ignores (contextOf keeps those out).
    const missing =
      /^Step \d+\/\d+ : (COPY|ADD)\s/i.test(this.step) && /not found in build context|no such file|does not exist/i.test(error)
        ? " lazy's build context holds only the files git tracks or would track under the Dockerfile's folder: ignored files (.env, keys, node_modules) stay out of the agent's image. Commit the file, take it out of .gitignore, or make it in a RUN step."
        : "";
    return new LazyError(
      "launch_refused",
      `Building the task image ${tag} failed${where}: ${why}.${missing} Fix the Dockerfile (or [container] in lazy.toml) and run again.`,
      ["the build's last lines:", ...lines.slice(-12).map((l) => `  ${l}`)],
    );
  }
}

/**
 * A base image that could not be pulled (no registry reachable, a name that does not exist):
 * not the Dockerfile's fault, so the remedy is another base or a mirror, not "Fix the Dockerfile".
 */
function pullFailure(step: string, error: string): LazyError | null {
  const from = /^Step \d+\/\d+ : FROM\s+(\S+)/i.exec(step)?.[1];
  const pulling =
    /pull access denied|manifest unknown|not found: manifest|failed to resolve|error pulling image|Get "?https?:\/\/[^ ]*\/v2\/|dial tcp|no such host|TLS handshake timeout|x509:|i\/o timeout/i;
  if (!from && !/pull access denied|manifest unknown/i.test(error)) return null;
  if (!pulling.test(error)) return null;
  return new LazyError(
    "launch_refused",
    `The base image ${from ? `${from} ` : ""}could not be pulled: ${error.trim()}. Set [container] base in lazy.toml to an image this engine has (docker images) or can pull, or point Docker at a registry mirror ("registry-mirrors" in /etc/docker/daemon.json); behind a proxy, the Docker engine itself needs HTTPS_PROXY (its systemd unit), not only this shell.`,
  );
}
/**
 * A task image's plan with the host's setup: the proxy variables as build args (Docker's
 * predefined ones, never in `docker history`), and the CA bundle after each FROM, its hash in
 * the tag so a new certificate builds anew.
 */
export function withHostNetwork(plan: ImagePlan, host: HostNet.HostNetwork): ImagePlan {
  if (plan.kind !== "build") return plan;
  const image = { ...plan, buildArgs: { ...plan.buildArgs, ...host.proxy } };
  if (!host.ca) return image;
  return { ...image, tag: `${plan.tag}-ca${host.ca.hash.slice(0, 8)}`, dockerfile: HostNet.withCa(plan.dockerfile, host.ca) };
}
