import { spawn } from "node:child_process";
import { constants } from "node:os";
import { join } from "node:path";
import type { ResolvedProfile } from "../../config";
import { State } from "../../daemon";
import * as Harness from "../../harness";
import { LazyError } from "../../util/errors";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, setExitCode } from "../command";
import { err } from "../out";
import { say } from "../voice";

interface GrantAnswer {
  envVar: string;
  placeholder: string;
  proxyUrl: string;
  profile: ResolvedProfile;
  /** A builder session's MCP route and token. */
  mcp?: { url: string; token: string };
  session?: string;
}

/** What a pair brings to a host launch: the task's worktree is the agent's, not the user's. */
interface Pair {
  taskId: string;
  /** The task container's harness folder (agent-written): transcripts are copied from it. */
  agentHarness: string;
  /** The task's git admin and common folders, from lazy's records. */
  git: { dir: string; commonDir: string };
}

/**
 * Run a profile's harness on the host, pointed at the proxy with the project's host grant
 * and configuration folders lazy owns (never the user's own CODEX_HOME or Pi folder).
 *
 * In a task's worktree (a pair) the harness starts with what it would load from that folder
 * turned off (the user is told what that was), in a folder lazy makes afresh holding only the
 * task's session transcripts, and with git pinned to the task's repository as lazy recorded it.
 */
export async function hostLaunch(opts: {
  root: string;
  cwd: string;
  profile?: string;
  args: string[];
  resume?: string;
  pair?: Pair;
  builder?: { name?: string };
}): Promise<number> {
  const c = await Client.connect(opts.root);
  const g = opts.builder
    ? await c.request<GrantAnswer>("POST", "/api/build/session", { name: opts.builder.name, profile: opts.profile, pid: process.pid })
    : await c.request<GrantAnswer>("POST", "/api/proxy/grants", { role: "host", profile: opts.profile, pid: process.pid });
  const harnessRoot = join(State.paths(opts.root).dir, "harness");
  const configDir = join(harnessRoot, opts.pair ? `pair-${opts.pair.taskId}` : g.session ? `build-${g.session}` : `host-${g.profile.name}`);
  try {
    return await launchWith(g, configDir, opts);
  } finally {
    // A builder session's grant and MCP token end with it, together.
    if (g.session)
      await c
        .request("POST", "/api/build/end", { session: g.session })
        .catch((e: Error) => say.error(`the builder session ${g.session} did not end cleanly: ${e.message}`));
  }
}

async function launchWith(g: GrantAnswer, configDir: string, opts: Parameters<typeof hostLaunch>[0]): Promise<number> {
  const prepared = Harness.prepare({
    proxyUrl: g.proxyUrl,
    envVar: g.envVar,
    placeholder: g.placeholder,
    profile: g.profile,
    configDir,
    args: opts.args,
    resume: opts.resume,
    untrustedCwd: opts.pair ? opts.cwd : undefined,
    mcp: g.mcp,
  });
  for (const thing of prepared.notLoaded ?? []) err(`lazy pair: not loaded from the worktree: ${thing}\n`);
  const sessions = Harness.sessionPaths(g.profile.harness);
  let copied: Harness.Sessions.Copied | undefined;
  if (opts.pair) {
    copied = Harness.Sessions.copyIn(opts.pair.agentHarness, configDir, sessions);
    for (const s of copied.skipped) err(`lazy pair: not copied from the task's harness folder: ${s}\n`);
  }
  Harness.writeFiles(configDir, prepared.files);
  const [bin, ...argv] = prepared.command;
  const env = Harness.environment(process.env, prepared);
  if (opts.pair) Object.assign(env, { GIT_DIR: opts.pair.git.dir, GIT_COMMON_DIR: opts.pair.git.commonDir, GIT_WORK_TREE: opts.cwd });
  const child = spawn(bin!, argv, { cwd: opts.cwd, stdio: "inherit", env });
  // A signal to lazy is meant for the harness it runs: pass it on, so none is left orphaned.
  const forward = (sig: NodeJS.Signals) => child.kill(sig);
  const signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];
  for (const s of signals) process.on(s, forward);
  const code = await new Promise<number>((resolve, reject) => {
    child.on("error", (e: NodeJS.ErrnoException) =>
      reject(
        e.code === "ENOENT"
          ? new LazyError(
              "launch_refused",
              `${bin} is not installed or not on PATH; install it to use the ${g.profile.name} profile on the host.`,
            )
          : e,
      ),
    );
    child.on("exit", (code, signal) => {
      for (const s of signals) process.off(s, forward);
      resolve(code ?? (signal ? 128 + (constants.signals[signal] ?? 1) : 1));
    });
  });
  // What the pair added to the session goes back to the task, so its next turn resumes it.
  if (opts.pair && copied)
    for (const p of Harness.Sessions.copyBack(configDir, opts.pair.agentHarness, sessions, copied))
      err(`lazy pair: the session was not copied back to the task: ${p}\n`);
  return code;
}

export const chat = command({
  meta: {
    name: "chat",
    description: "Run a profile's harness on the host in the project folder, through the proxy (-- ARGS pass through)",
  },
  args: { profile: { type: "string", description: "Agent profile (default: [models.roles] agent, else claude)" } },
  async run({ args, passthrough }) {
    const root = findProjectRoot();
    setExitCode(await hostLaunch({ root, cwd: root, profile: args.profile, args: passthrough }));
  },
});

export const pair = command({
  meta: {
    name: "pair",
    description:
      "Work with a task's agent on the host, in the task's worktree, resuming its session; nothing executable the agent left there (hooks, MCP servers, extensions) is loaded (-- ARGS pass through)",
  },
  args: { task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true } },
  async run({ args, passthrough }) {
    const root = findProjectRoot();
    const c = await Client.connect(root);
    const w = await c.request<{
      task: { id: string };
      worktree: string;
      configDir: string;
      session: string | null;
      profile: string;
      git: Pair["git"];
    }>("GET", `/api/tasks/${encodeURIComponent(args.task)}/workspace`);
    const pair = { taskId: w.task.id, agentHarness: w.configDir, git: w.git };
    setExitCode(await hostLaunch({ root, cwd: w.worktree, profile: w.profile, args: passthrough, resume: w.session ?? undefined, pair }));
  },
});

export const build = command({
  meta: {
    name: "build",
    description:
      "A builder session on the host: an agent that plans work as tasks with lazy's builder tools (create, list, show, start, send); accepting stays yours (-- ARGS pass through)",
  },
  args: {
    name: { type: "string", description: "The session's name (its grant and MCP token are keyed by it); default build-XXXXXX" },
    profile: { type: "string", description: "Profile (default: [models.roles] builder, else agent, else claude)" },
  },
  async run({ args, passthrough }) {
    const root = findProjectRoot();
    setExitCode(await hostLaunch({ root, cwd: root, profile: args.profile, args: passthrough, builder: { name: args.name } }));
  },
});
