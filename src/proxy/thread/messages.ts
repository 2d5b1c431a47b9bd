/**
 * What the daemon's main thread and a proxy thread say to each other (postMessage): the state
 * the request path reads (posted whole on every change), calls with their replies, audit
 * batches, and what a proxy thread asks the main thread.
 */
import type { Config } from "../../config";
import type { Resolved } from "../../credentials";
import type * as Log from "../../util/log";
import type { Batch, RefusalTally } from "../audit";
import type { Grant } from "../identity";
import type { LimitView, ProviderHealth } from "../meters";
import type { Spec as PluginSpec } from "../plugins";

export type Init = {
  config: Config;
  credentials: Record<string, Resolved>;
  grants: Grant[];
  /** The daemon API's roots: answered 404 here (listen/roots.ts). */
  apiRoots: string[];
  /** Tasks whose turns are stopped at their next request (a budget reached): task id, or "*" for every task → why. */
  stopped: Record<string, string>;
  /** Tasks whose placeholder redeems now: a turn or one of lazy's own calls about them runs. */
  live: string[];
  dbPath: string;
  log: Log.Settings;
  /** The request plugins to load, each a file or why it is refused (plugins/place.ts). */
  plugins: PluginSpec[];
};

export type ToThread =
  | { type: "init"; init: Init }
  | { type: "config"; config: Config }
  | { type: "plugins"; plugins: PluginSpec[] }
  | { type: "credentials"; credentials: Record<string, Resolved> }
  | { type: "grants"; grants: Grant[] }
  | { type: "stopped"; stopped: Record<string, string> }
  | { type: "live"; live: string[] }
  | { type: "api-roots"; roots: string[] }
  | { type: "call"; id: number; call: Call }
  | Answer;

export type Call =
  | { op: "listen"; host: string; port: number; shared: boolean; exact?: boolean }
  | { op: "unlisten"; host: string }
  | { op: "sync" }
  | { op: "stats" }
  | { op: "clear-problem"; name: string }
  | { op: "stop" };

export type Stats = { limits: LimitView[]; health: ProviderHealth[]; problems: Record<string, string> };
export type Listening = { address: { host: string; port: number } | null; error?: string };

export type FromThread =
  | { type: "reply"; id: number; value?: unknown; error?: string }
  | { type: "audit"; batch: Batch }
  /** Refusals of callers lazy cannot attribute, counted since the last hand-over (audit/refusals.ts). */
  | { type: "refused"; tally: RefusalTally }
  | { type: "ask"; id: number; ask: Ask };

/** What this thread asks the main thread: the Cursor session table lives there, shared by every proxy thread. */
export type Ask =
  | { op: "swap"; real: string; grant: Grant }
  | { op: "pairs"; grantToken: string }
  /**
   * Who may send a request on lazy's MCP route, asked with its token and address only, before
   * a byte of its body is read (the token table and its pins live on the main thread).
   */
  | { op: "mcp-admit"; token: string; from: string }
  /** A request on lazy's MCP route: the tools run on the main thread, where the store is. */
  | { op: "mcp"; method: string; headers: [string, string][]; body: string | null; from: string };
/** Who an MCP request's token stands for. */
export type McpWho = { taskId: string | null; taskRef: string | null; role: string };
/** The main thread's answer to `mcp-admit`: the caller, or why it is refused (a 401). */
export type McpAdmit = { ok: true; who: McpWho } | { ok: false; message: string; note: string };
/** The main thread's answer to an MCP request, and who made it (by its token), for the audit. */
export type McpAnswer = {
  status: number;
  headers: [string, string][];
  body: string;
  who: McpWho | null;
  note: string | null;
  /** A tool call refused by its bound (src/mcp/bounds.ts): counted on the task once a minute, so no audit row of its own. */
  counted?: boolean;
};
export type Answer = { type: "answer"; id: number; value: unknown };
