/**
 * The four harnesses behind one interface: each adapter says how its agent is pointed at the
 * proxy (variables, arguments, configuration files in a folder lazy owns) and nothing else.
 * Launching (on the host, or in a task container) is the caller's business.
 */
import { mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { writeFileAtomic, ensurePrivateDir } from "../util/files";
import type { Harness, Launch, Prepared, RealCredential, CredentialSlot } from "./types";
import { CREDENTIAL_VARS } from "./types";
import { claude } from "./claude";
import { codex } from "./codex";
import { pi } from "./pi";
import { cursor } from "./cursor";

export type { Harness, Launch, Prepared, RealCredential, CredentialSlot } from "./types";
export { CREDENTIAL_VARS } from "./types";

const harnesses: Record<Launch["profile"]["harness"], Harness> = { claude, codex, pi, cursor };

export function prepare(l: Launch): Prepared {
  return harnesses[l.profile.harness].prepare(l);
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

/** The environment a harness runs in: the base minus every credential variable, plus its own. */
export function environment(base: Record<string, string | undefined>, prepared: Prepared): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined && !(CREDENTIAL_VARS as readonly string[]).includes(k)) env[k] = v;
  return { ...env, ...prepared.env };
}
export { parse as parseEvent, type TaskEvent as HarnessEvent } from "./events";
