/**
 * The preflight: what a launch needs, checked before any task is stored (`lazy run`, `lazy task
 * add`/start/send, a best-of-N group, the dashboard's and the API's add), and what `lazy doctor`
 * shows — one place for the knowledge. Each check is a `Checked`: what it found as data
 * (`Found`), worded at the edges (daemon/words.ts `finding`: the API's refusal, lazy doctor's
 * lines). A launch is refused at the first blocking one (code `preflight_refused`, exit 4),
 * naming its cause and its remedy:
 *   (a) the folder is a git repository with a commit (the CLI asks before it starts a daemon);
 *   (b) the Docker engine this shell names is the one the running daemon uses, and it answers;
 *   (c) the task image exists, can be pulled (`[container] image`) or will be built;
 *   (d) the profile's harness runs in that image: its `--version` in a sealed container
 *       (containers/sealed.ts), remembered per image id in `preflight.json` in the state folder,
 *       so a warm launch asks the engine one inspect and reads one small file.
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { type Config, type Harness as HarnessName, resolveProfile } from "../config";
import { bindFor, type Engine, Image, imageDue, type Runtime, taskImage } from "../containers";
import * as Git from "../git";
import * as Harness from "../harness";
import { LazyError } from "../util/errors";
import { writeFileAtomic } from "../util/files";

/** One line of lazy doctor, in words (a preflight check's, worded by daemon/words.ts, or doctor's own). */
export interface Finding {
  check: string;
  ok: boolean;
  blocking: boolean;
  summary: string;
  remedy?: string;
  details?: string[];
}

/** What a preflight check found: its kind and facts, no sentence. */
export type Found =
  | { kind: "git_ok"; root: string; head: string }
  | { kind: "git_not_repo"; root: string }
  | { kind: "git_no_commit"; root: string }
  | { kind: "engine_same"; host: string }
  | { kind: "engine_other"; shell: string; shellSource: string; daemon: string; daemonSource: string }
  /** A lower layer's own refusal (the image's config, the engine's connection, [proxy] remote_bind), passed on in its words. */
  | { kind: "refused"; said: string; remedy?: string }
  | { kind: "engine_down"; host: string; source: string; error: string }
  | { kind: "image_stale"; tag: string; what: string }
  | { kind: "image_absent"; tag: string; host: string }
  | { kind: "image_pulled"; tag: string }
  | { kind: "image_unbuilt"; tag: string; what: string }
  | { kind: "image_present"; tag: string; host: string }
  /** `error`: the pull's, bounded and escaped (`shown`). */
  | { kind: "image_missing"; tag: string; host: string; error: string }
  | { kind: "harness_runs"; bin: string; tag: string; version: string }
  /**
   * `ran`: the program started, and `why` says how it ended ("it exited 1", "it did not end…");
   * otherwise `why` is the engine's own error (bounded). `output`: its end, bounded.
   */
  | {
      kind: "harness_missing";
      harness: string;
      bin: string;
      tag: string;
      source: "image" | "dockerfile" | "default";
      ran: boolean;
      why: string;
      output: string;
    };

/** One preflight check's result. */
export interface Checked {
  check: string;
  ok: boolean;
  blocking: boolean;
  found: Found;
  details?: string[];
}

/** How long a harness's `--version` may take in its sealed container (a cold image's first start included). */
export const HARNESS_TIMEOUT_MS = 20_000;
/** How long a pull of a named image may take before the launch is refused. */
export const PULL_TIMEOUT_MS = 10 * 60_000;
/** The cache of harnesses that ran, per image id (state folder). */
export const CACHE_FILE = "preflight.json";

/**
 * `LAZY_PREFLIGHT=off` in the environment (the daemon's, and the CLI's) skips the launch's
 * checks: for measuring what they cost (bench/preflight.ts), not for use. Doctor checks anyway.
 */
export const skipped = () => process.env.LAZY_PREFLIGHT === "off";

/** A blocking check as the refusal a launch gets: its check and what it found (worded at the edges). */
export function refusal(f: Checked): LazyError {
  return LazyError.of("preflight_refused", { reason: "preflight", check: f.check, found: f.found }, f.details ?? []);
}

/** The first blocking finding, thrown as the launch's refusal. */
export function refuseOn(findings: Checked[]): void {
  const bad = findings.find((f) => !f.ok && f.blocking);
  if (bad) throw refusal(bad);
}

/** (a) The folder is a git repository with at least one commit: a task's worktree starts from HEAD. */
export function gitFinding(root: string): Checked {
  const r = Git.git(root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], { allowFail: true });
  if (r.code === 0) return { check: "git", ok: true, blocking: false, found: { kind: "git_ok", root, head: r.out.trim().slice(0, 12) } };
  if (/not a git repository/i.test(r.err)) return { check: "git", ok: false, blocking: true, found: { kind: "git_not_repo", root } };
  return { check: "git", ok: false, blocking: true, found: { kind: "git_no_commit", root } };
}

/**
 * (b) The engine the daemon runs containers on against the one this shell names (DOCKER_HOST,
 * DOCKER_CONTEXT, the current context): a daemon started from another shell, or before a
 * `docker context use`, would run tasks where this shell's docker does not look.
 */
export function engineFinding(daemon: { host: string; source: string } | undefined, shell: Engine.Endpoint): Checked | undefined {
  if (!daemon) return undefined; // a daemon older than this CLI does not say
  if (sameEngine(daemon.host, shell.host))
    return { check: "docker", ok: true, blocking: false, found: { kind: "engine_same", host: daemon.host } };
  return {
    check: "docker",
    ok: false,
    blocking: true,
    found: { kind: "engine_other", shell: shell.host, shellSource: shell.source, daemon: daemon.host, daemonSource: daemon.source },
  };
}

/** Two names of one socket (/var/run is a link to /run on most Linux) are one engine. */
export function sameEngine(a: string, b: string): boolean {
  if (a === b) return true;
  const real = (h: string) => {
    if (!h.startsWith("unix://")) return h;
    try {
      return `unix://${realpathSync(h.slice("unix://".length))}`;
    } catch {
      return h;
    }
  };
  return real(a) === real(b);
}

/** The harnesses these profiles run (a profile that does not exist is refused by name). */
export function harnessesOf(config: Config, profiles: string[]): HarnessName[] {
  return [...new Set(profiles.map((p) => resolveProfile(config, p).harness))];
}

export interface PreflightDeps {
  root: string;
  /** The state folder: the cache of harnesses that ran lives there. */
  stateDir: string;
  /** The engine's connection (the daemon's one, or doctor's own to the shell's engine). */
  docker: () => Promise<Runtime>;
  /** Where that engine is, to name it. */
  endpoint: () => Engine.Endpoint;
}

type Cache = Record<string, Partial<Record<HarnessName, { version: string; at: string }>>>;

/** (c) and (d), and what a launch asks of them all. */
export class Preflight {
  constructor(private d: PreflightDeps) {}

  /**
   * Before a task is stored or a turn starts: (a), then (c) and (d) for `harnesses`. Throws the
   * first blocking finding. A named image that is missing is pulled here (the launch would need
   * it anyway); one lazy builds is checked once it is built (`afterBuild`).
   */
  async launch(config: Config, harnesses: HarnessName[]): Promise<void> {
    if (skipped()) return;
    refuseOn([gitFinding(this.d.root)]);
    refuseOn(await this.image(config, harnesses, { pull: true }));
  }

  /**
   * (c) and (d): the engine answers, the image is there (or pulled, or to be built), each
   * harness runs in it. `pull: false` (doctor) only says a missing named image is missing.
   */
  async image(config: Config, harnesses: HarnessName[], opts: { pull: boolean }): Promise<Checked[]> {
    let plan: Image.ImagePlan;
    let raw: Image.ImagePlan;
    try {
      ({ image: plan, raw } = taskImage(this.d.root, config, harnesses));
    } catch (e) {
      if (!(e instanceof LazyError)) throw e;
      return [
        { check: "image", ok: false, blocking: true, found: { kind: "refused", said: e.message, remedy: "fix [container] in lazy.toml" } },
      ];
    }
    const ep = this.d.endpoint();
    let docker: Runtime;
    let id: string | undefined;
    try {
      docker = await this.d.docker();
      id = await docker.imageId(plan.tag);
    } catch (e) {
      return [engineDown(ep, e)];
    }
    // A remote engine's containers reach the proxy only at [proxy] remote_bind: the launch's own rule.
    if (docker.remote)
      try {
        bindFor(docker.endpoint, config);
      } catch (e) {
        if (!(e instanceof LazyError)) throw e;
        return [{ check: "docker", ok: false, blocking: true, found: { kind: "refused", said: e.message } }];
      }
    const out: Checked[] = [];
    // A project Dockerfile's image built from other files than its context holds now is built
    // again by the launch: its harness is checked after that build, not in the old image.
    if (id && plan.kind === "build" && raw.kind === "build" && raw.context && Image.copiesContext(raw.dockerfile)) {
      const due = await imageDue(docker, this.d.root, plan, raw.dockerfile).catch(() => undefined);
      if (due?.stale)
        return [{ check: "image", ok: true, blocking: false, found: { kind: "image_stale", tag: plan.tag, what: plan.what } }];
    }
    if (!id && plan.kind === "given") {
      if (!opts.pull)
        return [{ check: "image", ok: false, blocking: false, found: { kind: "image_absent", tag: plan.tag, host: ep.host } }];
      const pulled = await docker.pull(plan.tag, PULL_TIMEOUT_MS);
      if (!pulled.ok) return [missingImage(plan.tag, ep, pulled.error)];
      id = await docker.imageId(plan.tag).catch(() => undefined);
      if (!id) return [missingImage(plan.tag, ep, "the pull ended but the engine has no such image")];
      out.push({ check: "image", ok: true, blocking: false, found: { kind: "image_pulled", tag: plan.tag } });
    } else if (!id && plan.kind === "build") {
      return [{ check: "image", ok: true, blocking: false, found: { kind: "image_unbuilt", tag: plan.tag, what: plan.what } }];
    } else out.push({ check: "image", ok: true, blocking: false, found: { kind: "image_present", tag: plan.tag, host: ep.host } });
    for (const h of harnesses) out.push(await this.harness(docker, plan.tag, id!, h, config));
    return out;
  }

  /** (d) after lazy built the image a launch found missing: the same check, refused the same way. */
  async afterBuild(docker: Runtime, tag: string, harness: HarnessName, config: Config): Promise<void> {
    const id = await docker.imageId(tag);
    if (id) refuseOn([await this.harness(docker, tag, id, harness, config)]);
  }

  /** (d) One harness in one image: remembered once it ran; run sealed otherwise. */
  private async harness(docker: Runtime, tag: string, id: string, h: HarnessName, config: Config): Promise<Checked> {
    const source = config.container.image ? "image" : config.container.dockerfile ? "dockerfile" : "default";
    const bin = Harness.binary(h);
    const known = this.cached(id, h);
    if (known) return { check: "harness", ok: true, blocking: false, found: { kind: "harness_runs", bin, tag, version: known } };
    let r: { code: number; output: string; timedOut: boolean };
    try {
      r = await docker.sealed(tag, [bin, "--version"], { user: String(Image.agentUid()), timeoutMs: HARNESS_TIMEOUT_MS });
    } catch (e) {
      // The engine could not start it: most often the program is not in the image.
      return harnessMissing(h, bin, tag, source, (e as { json?: { message?: string } }).json?.message ?? (e as Error).message);
    }
    if (r.code !== 0)
      return harnessMissing(
        h,
        bin,
        tag,
        source,
        r.timedOut ? `it did not end within ${HARNESS_TIMEOUT_MS / 1000} s (killed)` : `it exited ${r.code}`,
        r.output,
      );
    const version = shown(r.output.trim().split("\n")[0] ?? "", 120) || "(no output)";
    this.remember(id, h, version);
    return { check: "harness", ok: true, blocking: false, found: { kind: "harness_runs", bin, tag, version } };
  }

  private get cacheFile(): string {
    return join(this.d.stateDir, CACHE_FILE);
  }

  private read(): Cache {
    try {
      if (!existsSync(this.cacheFile)) return {};
      const c = JSON.parse(readFileSync(this.cacheFile, "utf8")) as unknown;
      return c && typeof c === "object" && !Array.isArray(c) ? (c as Cache) : {};
    } catch {
      return {};
    }
  }

  private cached(id: string, h: HarnessName): string | undefined {
    const v = this.read()[id]?.[h]?.version;
    return typeof v === "string" ? v : undefined;
  }

  /** Only a harness that ran is remembered (a failure is asked again next time: it may be fixed). Images gone are not kept forever: the last 32. */
  private remember(id: string, h: HarnessName, version: string): void {
    const c = this.read();
    c[id] = { ...c[id], [h]: { version, at: new Date().toISOString() } };
    const ids = Object.keys(c);
    for (const old of ids.slice(0, Math.max(0, ids.length - 32))) delete c[old];
    try {
      writeFileAtomic(this.cacheFile, `${JSON.stringify(c, null, 2)}\n`);
    } catch {} // a cache that cannot be written costs the next launch a check, nothing more
  }
}

/**
 * What an image printed, safe to show: bounded (its start, or with `end` its end), and its control bytes as escapes (JSON's), so a
 * hostile `--version` cannot move the cursor, retitle the window or fill the screen.
 */
export function shown(text: string, max: number, end = false): string {
  const cut = text.length <= max ? text : end ? `…${text.slice(-max)}` : `${text.slice(0, max)}…`;
  return JSON.stringify(cut).slice(1, -1).replace(/\\"/g, '"');
}

function engineDown(ep: Engine.Endpoint, e: unknown): Checked {
  // The connection's own refusal already says cause and remedy (containers/engine.ts unreachable).
  if (e instanceof LazyError) return { check: "docker", ok: false, blocking: true, found: { kind: "refused", said: e.message } };
  return {
    check: "docker",
    ok: false,
    blocking: true,
    found: { kind: "engine_down", host: ep.host, source: ep.source, error: (e as Error).message },
  };
}

function missingImage(tag: string, ep: Engine.Endpoint, error: string): Checked {
  return { check: "image", ok: false, blocking: true, found: { kind: "image_missing", tag, host: ep.host, error: shown(error, 300) } };
}

function harnessMissing(
  h: HarnessName,
  bin: string,
  tag: string,
  source: "image" | "dockerfile" | "default",
  why: string,
  output = "",
): Checked {
  return {
    check: "harness",
    ok: false,
    blocking: true,
    found: {
      kind: "harness_missing",
      harness: h,
      bin,
      tag,
      source,
      ran: /^(it |no )/.test(why),
      why: /^(it |no )/.test(why) ? why : shown(why, 300),
      output: output.trim() ? shown(output.trim(), 400, true) : "",
    },
  };
}
