/**
 * Two of lazy doctor's findings that compare what the daemon uses with what the person expects
 * (issue 30, Deliver 6): the credential a task with no profile bills, and the Docker engine the
 * daemon's containers run on against the one this shell points at. Kept apart from doctor.ts's
 * other checks so each reads on its own.
 */

import { realpathSync } from "node:fs";
import type { Engine } from "../../containers";
import { type CredentialInfo, STANDARD } from "../../credentials";

/** One line of lazy doctor (doctor.ts's Finding; said here too so neither file imports the other). */
interface Finding {
  check: string;
  ok: boolean;
  blocking: boolean;
  summary: string;
  remedy?: string;
}

/** What GET /api/auth says (defaultProfile is absent from a daemon older than this CLI). */
export interface AuthAnswer {
  credentials: CredentialInfo[];
  defaultProfile?: { name: string; credential: string | null };
}

/**
 * The default profile's credential is neither stored nor in the daemon's environment: the first
 * `lazy run` would be refused (exit 5). A profile that needs none (a local model) says nothing.
 */
export function defaultCredentialFinding(auth: AuthAnswer, shellEnv = process.env): Finding | undefined {
  const p = auth.defaultProfile;
  if (!p?.credential) return undefined;
  const found = auth.credentials.find((c) => c.name === p.credential);
  if (found)
    return {
      check: "auth",
      ok: true,
      blocking: false,
      summary: `the default profile (${p.name}) bills "${p.credential}": ${found.source === "env" ? `from the daemon's ${found.envVar ?? "environment"}` : `stored (${found.kind}, …${found.last4})`}`,
    };
  // The shell has it, the daemon (started elsewhere, or before the export) does not.
  const variable = STANDARD[p.credential];
  const exported = variable && shellEnv[variable] ? variable : undefined;
  return {
    check: "auth",
    ok: false,
    blocking: true,
    summary: `no "${p.credential}" credential is stored, and the default profile (${p.name}) needs it: every task that names no profile would be refused${exported ? ` (this shell exports ${exported}, but the daemon was started without it)` : ""}`,
    remedy: exported
      ? `lazy daemon restart from this shell, or store it: lazy auth set ${p.credential}`
      : `lazy auth set ${p.credential} (the key on stdin, or typed at the hidden prompt)`,
  };
}

/**
 * The daemon resolved its Docker engine from its own environment when it started (DOCKER_HOST,
 * DOCKER_CONTEXT, the current context): one started from another shell, or before a
 * `docker context use`, runs tasks on an engine other than the one this shell's docker sees.
 */
export function engineFinding(daemon: Engine.Endpoint | undefined, shell: Engine.Endpoint): Finding | undefined {
  if (!daemon) return undefined; // a daemon older than this CLI does not say
  if (same(daemon.host, shell.host))
    return { check: "docker", ok: true, blocking: false, summary: `the daemon uses the same engine as this shell (${daemon.host})` };
  return {
    check: "docker",
    ok: false,
    blocking: false,
    summary: `the daemon runs containers on ${daemon.host} (${daemon.source}), but this shell points at ${shell.host} (${shell.source}): tasks run on the daemon's engine`,
    remedy:
      "lazy daemon restart from this shell (the daemon takes this shell's DOCKER_HOST or Docker context); or point this shell at the daemon's engine",
  };
}

/** Two names of one socket (/var/run is a link to /run on most Linux) are one engine. */
function same(a: string, b: string): boolean {
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
