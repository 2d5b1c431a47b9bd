import { join } from "node:path";
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { command, setExitCode } from "../command";
import * as Client from "../client";
import { findProjectRoot } from "../../util/paths";
import { LazyError } from "../../util/errors";
import { State } from "../../daemon";
import * as Harness from "../../harness";
import type { ResolvedProfile } from "../../config";

interface GrantAnswer {
  envVar: string;
  placeholder: string;
  proxyUrl: string;
  profile: ResolvedProfile;
}

/**
 * Run a profile's harness on the host, pointed at the proxy with the project's host grant
 * and configuration folders lazy owns (never the user's own CODEX_HOME or Pi folder).
 */
export async function hostLaunch(opts: { root: string; cwd: string; profile?: string; args: string[]; resume?: string; configDir?: string }): Promise<number> {
  const c = await Client.connect(opts.root);
  const g = await c.request<GrantAnswer>("POST", "/api/proxy/grants", { role: "host", profile: opts.profile });
  const configDir = opts.configDir ?? join(State.paths(opts.root).dir, "harness", `host-${g.profile.name}`);
  const prepared = Harness.prepare({ proxyUrl: g.proxyUrl, envVar: g.envVar, placeholder: g.placeholder, profile: g.profile, configDir, args: opts.args, resume: opts.resume });
  Harness.writeFiles(configDir, prepared.files);
  const [bin, ...argv] = prepared.command;
  const child = spawn(bin!, argv, { cwd: opts.cwd, stdio: "inherit", env: Harness.environment(process.env, prepared) });
  // A signal to lazy is meant for the harness it runs: pass it on, so none is left orphaned.
  const forward = (sig: NodeJS.Signals) => child.kill(sig);
  const signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];
  for (const s of signals) process.on(s, forward);
  return new Promise<number>((resolve, reject) => {
    child.on("error", (e: NodeJS.ErrnoException) =>
      reject(e.code === "ENOENT" ? new LazyError("launch_refused", `${bin} is not installed or not on PATH; install it to use the ${g.profile.name} profile on the host.`) : e),
    );
    child.on("exit", (code, signal) => {
      for (const s of signals) process.off(s, forward);
      resolve(code ?? (signal ? 128 + (constants.signals[signal] ?? 1) : 1));
    });
  });
}

export const chat = command({
  meta: { name: "chat", description: "Run a profile's harness on the host in the project folder, through the proxy (-- ARGS pass through)" },
  args: { profile: { type: "string", description: "Agent profile (default: [models.roles] agent, else claude)" } },
  async run({ args, passthrough }) {
    const root = findProjectRoot();
    setExitCode(await hostLaunch({ root, cwd: root, profile: args.profile, args: passthrough }));
  },
});

export const pair = command({
  meta: { name: "pair", description: "Work with a task's agent on the host, in the task's worktree, resuming its session (-- ARGS pass through)" },
  args: { task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true } },
  async run({ args, passthrough }) {
    const root = findProjectRoot();
    const c = await Client.connect(root);
    const w = await c.request<{ worktree: string; configDir: string; session: string | null; profile: string }>("GET", `/api/tasks/${encodeURIComponent(args.task)}/workspace`);
    setExitCode(await hostLaunch({ root, cwd: w.worktree, profile: w.profile, args: passthrough, resume: w.session ?? undefined, configDir: w.configDir }));
  },
});
