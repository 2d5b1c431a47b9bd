/**
 * lazy's own model calls: one prompt, one answer, in a throwaway container launched the way an
 * agent turn is (the task image, the project network, lazy's supervisor, the harness of the
 * profile `[models.roles] agent` names), so the real credential reaches it only as a
 * placeholder and the call is audited like any other. Used by `lazy accept` (the summary),
 * `lazy ask`, `lazy report` and memory compaction.
 *
 * Grants (docs: "Lifetime"): a call about a task shares that task's grant when the task runs the
 * same profile, and otherwise gets its own, attributed to the task and revoked with it; a call
 * about no task shares one grant per project (role `lazy`).
 */
import { mkdirSync, lchownSync, rmSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import type { Database } from "bun:sqlite";
import { defaultProfile, resolveProfile, type Config } from "../config";
import { Image, type Runtime } from "../containers";
import * as Harness from "../harness";
import type { ModelProxy } from "../proxy";
import type { Task } from "../store";
import * as AgentDir from "../util/agent-dir";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import { FILES, type Exit } from "../supervisor";
import { BIN, containerEnv, linuxBinary } from "./container-spec";

export interface OwnCallDeps {
  root: string;
  slug: string;
  stateDir: string;
  db: Database;
  proxy: Pick<ModelProxy, "mintFor" | "pin">;
  config: () => Config;
  log: Logger;
  docker: () => Promise<Runtime>;
  gateway: (docker: Runtime, config: Config) => Promise<{ net: { name: string; gateway: string }; proxyUrl: string }>;
  image: (docker: Runtime, config: Config) => Promise<Image.ImagePlan>;
  ref: (t: Task) => string;
}

export interface Answer {
  text: string;
  /** The profile that answered. */
  profile: string;
}

/** How long one call may take, model included. */
const DEADLINE_MS = 10 * 60_000;
const MAX_EVENTS = 4 * 1024 * 1024;

export class OwnCalls {
  /** Containers of calls in flight: housekeeping leaves them alone (and their network). */
  readonly active = new Set<string>();

  constructor(private d: OwnCallDeps) {}

  /** Whether a container is one of lazy's own calls (in flight or left by a daemon that died). */
  isCall(name: string): boolean {
    return name.startsWith(`lazy-${this.d.slug}-call-`);
  }

  /**
   * Ask the model one thing. `task` attributes the call (and its grant) to that task. Fails
   * loudly (a LazyError naming the cause); the caller decides what a failure means.
   */
  async ask(prompt: string, opts: { task?: Task; purpose: string }): Promise<Answer> {
    const config = this.d.config();
    const profile = resolveProfile(config, defaultProfile(config));
    const task = opts.task;
    const shared = task && task.profile === profile.name;
    const launch = await this.d.proxy.mintFor({
      role: shared ? "agent" : "lazy",
      profile: profile.name,
      taskId: task?.id ?? null,
      taskRef: task ? this.d.ref(task) : null,
    });
    const docker = await this.d.docker();
    const image = await this.d.image(docker, config);
    const { net, proxyUrl } = await this.d.gateway(docker, config);

    // A folder of its own under the state folder, the agent's to write; gone after the call.
    const id = randomBytes(6).toString("hex");
    const dir = join(this.d.stateDir, "calls", id);
    const uid = Image.agentUid();
    for (const sub of ["", "home", "harness", "turns"]) mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 });
    if (process.getuid?.() === 0) for (const sub of ["", "home", "harness", "turns"]) lchownSync(join(dir, sub), uid, uid);
    const prepared = Harness.prepare({
      proxyUrl,
      envVar: launch.envVar,
      placeholder: launch.placeholder,
      profile,
      configDir: "/lazy/harness",
      prompt,
      args: [],
    });
    for (const [rel, content] of Object.entries(prepared.files))
      AgentDir.write(join(dir, "harness"), rel, content, { uid: process.getuid?.() === 0 ? uid : undefined });

    let container: string | undefined;
    const name = `lazy-${this.d.slug}-call-${id}`;
    this.active.add(name);
    try {
      container = await docker.create({
        name,
        image: image.tag,
        project: this.d.slug,
        root: this.d.root,
        taskId: task?.id ?? "",
        user: `${uid}:${uid}`,
        env: containerEnv(this.d.root),
        mounts: [
          // The project, read-only, so a call can read what it is asked about.
          { host: this.d.root, container: this.d.root, readOnly: true },
          { host: join(dir, "home"), container: "/lazy/home", readOnly: false },
          { host: join(dir, "harness"), container: "/lazy/harness", readOnly: false },
          { host: join(dir, "turns"), container: "/lazy/turns", readOnly: false },
          { host: linuxBinary(), container: BIN, readOnly: true },
        ],
        network: net.name,
        hostGateway: docker.kind === "desktop",
        cmd: [BIN, "supervise", "--idle"],
      });
      const info = await docker.inspect(container);
      if (docker.pins && info?.ip) await this.d.proxy.pin(launch.placeholder, info.ip);
      const exec = await docker.execDetached(
        container,
        [BIN, "supervise", "--turn", "/lazy/turns/1", "--cwd", this.d.root, "--", ...prepared.command],
        prepared.env,
        `${uid}:${uid}`,
      );
      const exit = await this.waitFor(docker, exec, join(dir, "turns"));
      const text = this.answerOf(join(dir, "turns"), profile.harness);
      if (exit.code !== 0 || !text)
        throw new LazyError(
          "launch_refused",
          `lazy's own model call (${opts.purpose}, profile ${profile.name}) failed: ${exit.error ?? (text ? `exit code ${exit.code}` : "the model gave no answer")}; lazy stats audit shows the call.`,
        );
      return { text, profile: profile.name };
    } finally {
      if (container) await docker.remove(container);
      this.active.delete(name);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  private async waitFor(docker: Runtime, exec: string, turns: string): Promise<Exit> {
    const deadline = Date.now() + DEADLINE_MS;
    // The supervisor makes the turn's folder: until it has, there is nothing to read.
    const exitText = () => {
      try {
        return AgentDir.readText(turns, `1/${FILES.exit}`, 64 * 1024);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
        throw e;
      }
    };
    for (;;) {
      const text = exitText();
      if (text !== null) {
        try {
          return JSON.parse(text) as Exit;
        } catch {
          return {
            code: null,
            signal: null,
            at: new Date().toISOString(),
            error: "the call's exit.json is not what the supervisor writes",
          };
        }
      }
      const st = await docker.execState(exec);
      if (st && !st.running) {
        // The supervisor ended: its exit.json may land a moment after; one more look, then fail.
        await Bun.sleep(200);
        if (exitText() !== null) continue;
        return { code: st.code, signal: null, at: new Date().toISOString(), error: "the supervisor ended without reporting" };
      }
      if (Date.now() > deadline)
        return { code: null, signal: null, at: new Date().toISOString(), error: `no answer within ${DEADLINE_MS / 60_000} minutes` };
      await Bun.sleep(250);
    }
  }

  /** The harness's final answer: its result event, else its last message. */
  private answerOf(turns: string, harness: Harness.Harness["name"]): string {
    const got = AgentDir.read(turns, `1/${FILES.events}`, { max: MAX_EVENTS, offset: 0 });
    let result = "";
    let last = "";
    for (const line of (got?.data.toString("utf8") ?? "").split("\n"))
      for (const e of Harness.parseEvent(harness, line)) {
        if (e.kind === "result" && e.data.ok !== false && typeof e.data.text === "string") result = e.data.text;
        if (e.kind === "message" && typeof e.data.text === "string") last = e.data.text;
      }
    return (result || last).trim();
  }
}
