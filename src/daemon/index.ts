/**
 * The per-project daemon: the one owner of lazy's state (task store, config, proxy, API,
 * housekeeping). Every other part of lazy is a client of it. The CLI imports only the light
 * parts from here (state files, types); the daemon itself loads when `lazy daemon run` asks.
 */
export * as State from "./state";
export type { DaemonRecord } from "./state";
export type { Status, Busy } from "./status";
export type { Daemon } from "./daemon";
/** What the API answers, route by route (the dashboard client imports these, type-only). */
export type { Answers } from "./routes";

/** `lazy daemon run`: serve the project in this process until told to stop. */
export async function run(root: string): Promise<void> {
  const { serve } = await import("./daemon");
  await serve(root);
}
