/**
 * The per-project daemon: the one owner of lazy's state (task store, config, proxy, API,
 * housekeeping). Every other part of lazy is a client of it. The CLI imports only the light
 * parts from here (state files, types); the daemon itself loads when `lazy daemon run` asks.
 */

export type { Daemon } from "./daemon";
export * as Keeper from "./keeper";
export type { Busy, DaemonStatus } from "./routes";
export type { DaemonRecord } from "./state";
export * as State from "./state";
export * as Title from "./title";
/** The API's voice for refusals made as data (the CLI's starts from it). */
export * as Words from "./words";

/**
 * `lazy daemon run`: the keeper (keeper.ts), which runs `daemon` (this same command, marked
 * LAZY_KEPT) as its child and starts it again after a crash; the child serves the project in
 * its process until told to stop. `LAZY_KEEPER=0` serves here with no keeper.
 */
export async function run(root: string, daemon: string[]): Promise<void> {
  const { name } = await import("./title");
  if (process.env.LAZY_KEPT === "1" || process.env.LAZY_KEEPER === "0") {
    await name("daemon", root);
    const { serve } = await import("./daemon");
    await serve(root);
    return;
  }
  await name("keeper", root);
  const { keep } = await import("./keeper");
  const { configure } = await import("../util/log");
  const { paths } = await import("./state");
  configure({ file: paths(root).log, stderr: !process.env.LAZY_DAEMON_DETACHED });
  process.exit(await keep(root, daemon));
}
