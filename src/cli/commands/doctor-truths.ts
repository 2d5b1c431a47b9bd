/**
 * A lazy doctor finding that compares what the daemon uses with what the person expects (issue
 * 30, Deliver 6): the credential a task with no profile bills. (The Docker engine the daemon's
 * containers run on against the one this shell points at is the preflight's: src/preflight.)
 */

import { type CredentialInfo, STANDARD } from "../../credentials";
import type { Finding } from "../../preflight";

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
