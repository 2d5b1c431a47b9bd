/**
 * `lazy completion bash|zsh|fish`. The tree comes from the caller (cli/index.ts passes its own
 * root) so this file does not import the CLI's entry, which loads it.
 */
import type { CommandDef } from "citty";
import { LazyError } from "../../util/errors";
import { command } from "../command";
import * as Completion from "../completion";
import { out } from "../out";

export const completion = (root: CommandDef<any>) =>
  command({
    meta: {
      name: "completion",
      description: "Print the shell completion script: source <(lazy completion bash), zsh likewise, lazy completion fish | source",
    },
    args: {
      shell: { type: "positional", description: "bash, zsh or fish", valueHint: Completion.SHELLS.join("|"), required: true },
    },
    async run({ args }) {
      if (!Completion.isShell(args.shell))
        throw new LazyError("invalid_input", `lazy completion: unknown shell "${args.shell}"; one of ${Completion.SHELLS.join(", ")}.`);
      out(await Completion.script(args.shell, root));
    },
  });
