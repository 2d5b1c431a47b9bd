import * as Supervisor from "../../supervisor";
import { LazyError } from "../../util/errors";
import { command, print, setExitCode } from "../command";

export const supervise = command({
  meta: { name: "supervise", description: "Run next to an agent inside its task container (lazy starts it; not for people)", hidden: true },
  args: {
    idle: { type: "boolean", description: "Keep the container alive between turns" },
    turn: { type: "string", description: "Run one turn, reporting into this folder" },
    cwd: { type: "string", description: "The agent's working folder" },
    stdin: { type: "string", description: "Start the harness now; give it this file's content on stdin once the file exists" },
    stop: { type: "string", description: "Send SIGTERM to the harness of the turn reporting into this folder" },
    probe: { type: "string", description: "Exit 0 when this URL answers over HTTP at all (a remote engine's reach of the proxy)" },
  },
  async run({ args, passthrough }) {
    if (args.probe) return setExitCode(await probe(args.probe));
    if (args.idle) return setExitCode(await Supervisor.idle());
    if (args.stop) return setExitCode(Supervisor.stop(args.stop));
    if (!args.turn || !passthrough.length) throw new LazyError("invalid_input", "lazy supervise needs --idle, or --turn DIR -- COMMAND.");
    setExitCode(await Supervisor.turn(args.turn, args.cwd ?? process.cwd(), passthrough, args.stdin));
  },
});

/**
 * Any HTTP answer within PROBE_MS is a reach; otherwise the cause on stdout (for the launch's
 * refusal) and 1. A first connection to a proxy across a freshly made network has taken over 5 s
 * on a loaded machine (CI): 10 s, inside the 20 s the launch gives the whole probe container.
 */
const PROBE_MS = 10_000;
async function probe(url: string): Promise<number> {
  try {
    await (await fetch(url, { signal: AbortSignal.timeout(PROBE_MS), redirect: "manual" })).arrayBuffer();
    return 0;
  } catch (e) {
    // A timeout is a DOMException, whose `code` is a number: the cause is said in words.
    const err = e as Error & { code?: unknown; cause?: { code?: unknown } };
    const code = [err.cause?.code, err.code].find((c) => typeof c === "string");
    print(code ?? (err.name === "TimeoutError" ? `no answer within ${PROBE_MS / 1000} s` : err.name));
    return 1;
  }
}
