/**
 * Shell completion: `lazy completion bash|zsh|fish` prints a script made from the command tree
 * (tree.ts reads the citty definitions), so a new command or flag completes without anyone
 * writing a line for it.
 */
import type { CommandDef } from "citty";
import { bash } from "./bash";
import { fish } from "./fish";
import { walk } from "./tree";
import { zsh } from "./zsh";

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];
export const isShell = (s: string): s is Shell => (SHELLS as readonly string[]).includes(s);

const render = { bash, zsh, fish } satisfies Record<Shell, unknown>;

/** The completion script for this shell, for the tree below root. */
export async function script(shell: Shell, root: CommandDef<any>): Promise<string> {
  return render[shell](await walk(root));
}
