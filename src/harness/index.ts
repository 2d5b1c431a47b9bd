/**
 * The four harnesses behind one interface: each adapter says how its agent is pointed at the
 * proxy (variables, arguments, configuration files in a folder lazy owns) and nothing else.
 * Launching (on the host, or in a task container) is the caller's business. A launch in an
 * agent-written worktree (lazy pair) is inspected first: what the harness would load from there
 * is turned off and named, or, where the harness has no switch for it, the launch is refused.
 */
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import * as AgentDir from "../agent-dir";
import { LazyError } from "../util/errors";
import { ensurePrivateDir, writeFileAtomic } from "../util/files";
import * as NoProxy from "../util/no-proxy";
import { claude } from "./claude";
import { codex } from "./codex";
import { cursor } from "./cursor";
import { pi } from "./pi";
import { CREDENTIAL_VARS, type CredentialSlot, type Harness, type Launch, type Prepared, type RealCredential } from "./types";

import { printable } from "./worktree";

export * as Sessions from "./sessions";
export type { CredentialSlot, Harness, Inspection, Launch, Prepared, RealCredential } from "./types";
export { CREDENTIAL_VARS } from "./types";

const harnesses: Record<Launch["profile"]["harness"], Harness> = { claude, codex, pi, cursor };

export function prepare(l: Launch): Prepared {
  const h = harnesses[l.profile.harness];
  if (l.untrustedCwd === undefined) return h.prepare(l);
  const seen = h.inspect(l.untrustedCwd);
  if (seen.refused.length)
    throw new LazyError(
      "launch_refused",
      l.oneShot
        ? `${h.name} would load configuration from the project's checkout that lazy cannot turn off: ${seen.refused.map(printable).join("; ")}. Remove it in ${l.untrustedCwd}, or make [models.roles] agent a profile of another harness, for lazy's own calls (ask, report, the accept summary).`
        : `${h.name} would load configuration from the task's worktree that lazy cannot turn off: ${seen.refused.map(printable).join("; ")}. Remove it in ${l.untrustedCwd} (or let the agent work in its container: lazy send), then run lazy pair again.`,
    );
  return { ...h.prepare(l), notLoaded: seen.notLoaded.map(printable) };
}

/** The program a harness runs as (`claude`, `cursor-agent`, …). */
export function binary(harness: Launch["profile"]["harness"]): string {
  return harnesses[harness].binary;
}

/** What to write on the stdin of a harness started with `promptOnStdin`; undefined when it cannot take a prompt that way. */
export function stdinPrompt(harness: Launch["profile"]["harness"], prompt: string): string | undefined {
  return harnesses[harness].stdinPrompt?.(prompt);
}

/** Whether the harness can start before its prompt is known (`promptOnStdin`). */
export function takesStdinPrompt(harness: Launch["profile"]["harness"]): boolean {
  return harnesses[harness].stdinPrompt !== undefined;
}

/** Where in a harness's configuration folder its session transcripts live. */
export function sessionPaths(harness: Launch["profile"]["harness"]): readonly string[] {
  return harnesses[harness].sessions;
}

/**
 * Whether a session's transcript is in the harness folder (agent-written: read with AgentDir),
 * where lazy knows how to tell: Claude Code keeps `projects/<folder>/<session>.jsonl`. A turn
 * killed before Claude Code saved its transcript leaves none, and `--resume` of it fails every
 * later turn ("No conversation found"). Undefined: this harness's layout is not checked.
 */
export function sessionSaved(harness: Launch["profile"]["harness"], configDir: string, session: string): boolean | undefined {
  if (harness !== "claude" || !/^[A-Za-z0-9_-]{1,128}$/.test(session)) return undefined;
  try {
    return AgentDir.list(configDir, "projects").some((d) => AgentDir.lstat(configDir, `projects/${d}/${session}.jsonl`)?.isFile());
  } catch {
    return undefined; // a link or special file where a folder goes: the harness decides
  }
}

/** The variable the profile's harness reads its credential from, and the placeholder's shape. */
export function slot(profile: Launch["profile"], real: RealCredential): CredentialSlot {
  return harnesses[profile.harness].slot(profile, real);
}

/** Write the harness's configuration files (0600 in a 0700 folder), replacing what was there. */
export function writeFiles(configDir: string, files: Record<string, string>): void {
  ensurePrivateDir(configDir);
  for (const [rel, content] of Object.entries(files)) {
    const path = join(configDir, rel);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileAtomic(path, content);
  }
}

/**
 * The environment a harness runs in: the base minus every credential variable, plus its own.
 * Behind the host's proxy (HTTP(S)_PROXY, ALL_PROXY) loopback joins NO_PROXY: a harness on the
 * host reaches lazy's proxy on 127.0.0.1, and most clients (Bun, curl, reqwest) would send that
 * through the company proxy, placeholder and all, where it cannot arrive (util/no-proxy.ts:
 * the same rule the daemon's own upstream requests follow).
 */
export function environment(base: Record<string, string | undefined>, prepared: Prepared): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined && !(CREDENTIAL_VARS as readonly string[]).includes(k)) env[k] = v;
  return NoProxy.withLoopback({ ...env, ...prepared.env });
}

export { parse as parseEvent, type TaskEvent as HarnessEvent } from "./events";

/** The `Co-Authored-By` value lazy accept writes for work done by this harness (types.ts `coAuthor`). */
export function coAuthor(harness: Launch["profile"]["harness"]): string {
  return harnesses[harness].coAuthor;
}
