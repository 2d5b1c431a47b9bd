/**
 * The task image: `[container] image` as is, or built from the project's Dockerfile
 * (`[container] dockerfile`), or lazy's own default, built from the Dockerfile below that
 * ships inside the binary (Debian, git, node, sudo and the four harnesses' npm packages).
 * The default's base is a build argument, so it builds from a local base where no registry
 * is reachable. The agent runs as a non-root user with passwordless sudo, so it can install
 * packages in its own container; lazy's binary is mounted at run time, never baked in.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { DEFAULT_BASE } from "../config";
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
RUN npm install -g --no-audit --no-fund --loglevel=error \\
      "@anthropic-ai/claude-code@\${CLAUDE_CODE_VERSION}" "@openai/codex@\${CODEX_VERSION}" \\
      "@mariozechner/pi-coding-agent@\${PI_VERSION}"
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

/** A minimal tar archive (ustar) of in-memory files: the build context for a Dockerfile given as text. */
export function tar(files: Record<string, string | Uint8Array>): Uint8Array {
  const blocks: Uint8Array[] = [];
  const enc = new TextEncoder();
  for (const [name, content] of Object.entries(files)) {
    const data = typeof content === "string" ? enc.encode(content) : content;
    const h = new Uint8Array(512);
    const put = (s: string, off: number, len: number) => h.set(enc.encode(s).slice(0, len), off);
    // ustar keeps long paths as prefix (155) + name (100), split at a slash.
    let short = name;
    if (enc.encode(name).length > 100) {
      const at = [...name.matchAll(/\//g)].map((m) => m.index!).find((i) => name.length - i - 1 <= 100 && i <= 155);
      if (at === undefined)
        throw new LazyError("invalid_input", `A file path in the Docker build context is too long for the archive: ${name}`);
      put(name.slice(0, at), 345, 155);
      short = name.slice(at + 1);
    }
    put(short, 0, 100);
    put("0000644\0", 100, 8);
    put("0000000\0", 108, 8);
    put("0000000\0", 116, 8);
    put(data.length.toString(8).padStart(11, "0") + "\0", 124, 12);
    put(
      Math.floor(Date.now() / 1000)
        .toString(8)
        .padStart(11, "0") + "\0",
      136,
      12,
    );
    put("        ", 148, 8);
    put("0", 156, 1);
    put("ustar\0", 257, 6);
    put("00", 263, 2);
    let sum = 0;
    for (const b of h) sum += b;
    put(sum.toString(8).padStart(6, "0") + "\0 ", 148, 8);
    blocks.push(h, data, new Uint8Array((512 - (data.length % 512)) % 512));
  }
  blocks.push(new Uint8Array(1024));
  return Buffer.concat(blocks);
}

/** The build context of a project Dockerfile: every file under its folder but .git. */
export function contextOf(dir: string, dockerfile: string): Record<string, Uint8Array | string> {
  const files: Record<string, Uint8Array | string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === ".git") continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) files[relative(dir, p)] = readFileSync(p);
    }
  };
  walk(dir);
  files.Dockerfile = dockerfile;
  return files;
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
    return new LazyError(
      "launch_refused",
      `Building the task image ${tag} failed${where}: ${why}. Fix the Dockerfile (or [container] in lazy.toml) and run again.`,
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
