import { command, setExitCode } from "../command";
import * as Supervisor from "../../supervisor";
import { LazyError } from "../../util/errors";

export const supervise = command({
  meta: { name: "supervise", description: "Run next to an agent inside its task container (lazy starts it; not for people)", hidden: true },
  args: {
    idle: { type: "boolean", description: "Keep the container alive between turns" },
    turn: { type: "string", description: "Run one turn, reporting into this folder" },
    cwd: { type: "string", description: "The agent's working folder" },
    stdin: { type: "string", description: "Start the harness now; give it this file's content on stdin once the file exists" },
    stop: { type: "string", description: "Send SIGTERM to the harness of the turn reporting into this folder" },
  },
  async run({ args, passthrough }) {
    if (args.idle) return setExitCode(await Supervisor.idle());
    if (args.stop) return setExitCode(Supervisor.stop(args.stop));
    if (!args.turn || !passthrough.length) throw new LazyError("invalid_input", "lazy supervise needs --idle, or --turn DIR -- COMMAND.");
    setExitCode(await Supervisor.turn(args.turn, args.cwd ?? process.cwd(), passthrough, args.stdin));
  },
});
