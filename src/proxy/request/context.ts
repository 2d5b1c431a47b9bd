/**
 * What the request path needs of the proxy thread that runs it: the grant table, the live set
 * and stopped tasks, the credentials and targets, and where its records go. Every stage of the
 * path (forward.ts) and the Cursor route take it; the thread (thread/entry.ts) builds it once.
 */
import type { CredentialStore } from "../../credentials";
import type { Logger } from "../../util/log";
import type { Recorder } from "../audit";
import type { Grants, Targets } from "../identity";
import type { Health, Limits } from "../meters";
import type { Chain } from "../plugins";
import type { Fallbacks } from "./fallback";

export interface Context {
  grants: Pick<Grants, "lookup">;
  /** Why a task's turns are stopped at their next request (a budget reached), if they are. */
  stopped: (taskId: string) => string | undefined;
  /** Whether a turn, or one of lazy's own calls, about the task runs now: only then do its grants redeem. */
  live: (taskId: string) => boolean;
  credentials: Pick<CredentialStore, "get">;
  targets: () => Targets;
  audit: Pick<Recorder, "record" | "refused">;
  limits: Pick<Limits, "record" | "refused">;
  health: Health;
  log: Logger;
  firstByteTimeoutMs: () => number;
  /** OAuth credentials an upstream rejected, for lazy doctor: name → sentence. */
  credentialProblems: Map<string, string>;
  /** [[proxy.fallback]], in order (fallback.ts); none when absent. */
  fallbacks?: () => Fallbacks;
  /** The request plugins ([[proxy.plugins]]); null (or absent) when none is configured. */
  plugins?: () => Chain | null;
}
