/**
 * How one of lazy's own calls ends, read off its turns folder on the host (a remote engine's
 * mirrored there): its exit (or why there is none, within the deadline) and the answer the
 * harness gave, bounded.
 */
import { join } from "node:path";
import * as AgentDir from "../agent-dir";
import type { Runtime } from "../containers";
import * as Harness from "../harness";
import { type Exit, FILES } from "../supervisor";

/** How long one call may take, model included. */
const DEADLINE_MS = 10 * 60_000;
const MAX_EVENTS = 4 * 1024 * 1024;

/**
 * Wait for the call's one turn to end: its exit.json in the host's turns folder (a remote
 * engine's mirrored there; `readBack` reads it once more after the supervisor ended, or says
 * why it cannot), or why there is none.
 */
export async function waitFor(
  docker: Runtime,
  exec: string,
  vessel: { name: string; dir: string; container: string },
  readBack: (docker: Runtime) => Promise<void>,
): Promise<Exit> {
  const turns = join(vessel.dir, "turns");
  const deadline = Date.now() + DEADLINE_MS;
  // The supervisor makes the turn's folder: until it has, there is nothing to read.
  const exitText = () => {
    try {
      return AgentDir.readText(turns, `1/${FILES.exit}`, 64 * 1024);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw e;
    }
  };
  for (;;) {
    const text = exitText();
    if (text !== null) {
      try {
        return JSON.parse(text) as Exit;
      } catch {
        return {
          code: null,
          signal: null,
          at: new Date().toISOString(),
          error: "the call's exit.json is not what the supervisor writes",
        };
      }
    }
    const st = await docker.execState(exec);
    // Ended, or unknown to the engine (its container removed, the engine restarted).
    if (!st?.running) {
      // The supervisor ended: its exit.json may land a moment after; one more look, then fail.
      await Bun.sleep(200);
      // A remote engine: what the mirror has not brought yet, or why it cannot (over its bound).
      const unread = docker.remote
        ? await readBack(docker).then(
            () => undefined,
            (e: unknown) => (e as Error).message,
          )
        : undefined;
      if (exitText() !== null) continue;
      const up = (await docker.inspect(vessel.container))?.running;
      // The engine did not answer about the exec, but the container runs: wait on (to the deadline).
      if (!st && up && Date.now() <= deadline) continue;
      return {
        code: st?.code ?? null,
        signal: null,
        at: new Date().toISOString(),
        error: unread
          ? `its turn folder was not read back from the Docker engine at ${docker.endpoint.host}: ${unread}`
          : up
            ? "the supervisor ended without reporting"
            : `its container ${vessel.name} was stopped or removed outside lazy (docker kill or rm, an engine restart)`,
      };
    }
    if (Date.now() > deadline)
      return { code: null, signal: null, at: new Date().toISOString(), error: `no answer within ${DEADLINE_MS / 60_000} minutes` };
    await Bun.sleep(250);
  }
}

/** The harness's final answer: its result event, else its last message. */
export function answerOf(turns: string, harness: Harness.Harness["name"]): string {
  const got = AgentDir.read(turns, `1/${FILES.events}`, { max: MAX_EVENTS, offset: 0 });
  let result = "";
  let last = "";
  for (const line of (got?.data.toString("utf8") ?? "").split("\n"))
    for (const e of Harness.parseEvent(harness, line)) {
      if (e.kind === "result" && e.data.ok !== false && typeof e.data.text === "string") result = e.data.text;
      if (e.kind === "message" && typeof e.data.text === "string") last = e.data.text;
    }
  return (result || last).trim();
}
