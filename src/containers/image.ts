/**
 * The task image: `[container] image` as is, or built from the project's Dockerfile
 * (`[container] dockerfile`), or lazy's own default, built from the Dockerfile below that
 * ships inside the binary (Debian, git, node, sudo and the four harnesses' npm packages).
 * The default's base is a build argument, so it builds from a local base where no registry
 * is reachable. The agent runs as a non-root user with passwordless sudo, so it can install
 * packages in its own container; lazy's binary is mounted at run time, never baked in.
 */
import { createHash } from "node:crypto";
import { existsSync, lstatSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { BuildFiles, DEFAULT_BASE } from "../config";
import { readRegular } from "../util/bounded-read";
import { LazyError } from "../util/errors";
import { VERSION } from "../version";

export const HARNESS_VERSIONS = { claude: "2.1.197", codex: "0.171.0", pi: "0.73.1" } as const;

export const DEFAULT_DOCKERFILE = `# lazy's default task image. BASE is a build argument so it can come from a local image.
ARG BASE=${DEFAULT_BASE}
FROM \${BASE}
ARG AGENT_UID=1000
ARG CLAUDE_CODE_VERSION=${HARNESS_VERSIONS.claude}
ARG CODEX_VERSION=${HARNESS_VERSIONS.codex}
ARG PI_VERSION=${HARNESS_VERSIONS.pi}
ENV DEBIAN_FRONTEND=noninteractive
RUN set -eux; \\
    need=""; \\
    for c in git node npm sudo ps; do command -v "$c" >/dev/null 2>&1 || need=yes; done; \\
    if [ -n "$need" ]; then \\
      apt-get update; \\
      apt-get install -y --no-install-recommends ca-certificates git nodejs npm sudo procps; \\
      rm -rf /var/lib/apt/lists/*; \\
    fi
# Claude Code and Pi want node 22; Debian ships older. The node package on npm brings it.
RUN set -eux; \\
    if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then npm install -g --no-audit --no-fund --loglevel=error node@22; fi; \\
    hash -r; node --version
# npm skips an optional package it failed to fetch without failing: Claude Code's native binary
# is one. Each harness runs once here, so an image without one fails its build, naming it.
RUN set -eu; \\
    npm install -g --no-audit --no-fund --loglevel=error \\
      "@anthropic-ai/claude-code@\${CLAUDE_CODE_VERSION}" "@openai/codex@\${CODEX_VERSION}" \\
      "@mariozechner/pi-coding-agent@\${PI_VERSION}"; \\
    for h in claude codex pi; do "$h" --version >/dev/null || { echo "lazy: $h does not run in this image (npm install above)" >&2; exit 1; }; done
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
  | { kind: "build"; tag: string; dockerfile: string; context: string | null; buildArgs: Record<string, string>; what: string };

/** The agent's uid: the host user's, or 1000 when lazy runs as root (the agent never is). */
export function agentUid(): number {
  const uid = process.getuid?.() ?? 1000;
  return uid === 0 ? 1000 : uid;
}

export function plan(root: string, container: { image?: string; dockerfile?: string; base?: string }): ImagePlan {
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
  const base = container.base ?? DEFAULT_BASE;
  const hash = createHash("sha256").update(DEFAULT_DOCKERFILE).update(base).update(uid).digest("hex").slice(0, 12);
  return {
    kind: "build",
    tag: `lazy/agent:${VERSION}-${hash}`,
    dockerfile: DEFAULT_DOCKERFILE,
    context: null,
    buildArgs: { BASE: base, AGENT_UID: uid },
    what: `lazy's default image (FROM ${base})`,
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
