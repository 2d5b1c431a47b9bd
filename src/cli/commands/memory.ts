import type { Note } from "../../store";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson } from "../command";
import { say } from "../voice";

const list = async (asJson: boolean) => {
  const c = await Client.connect(findProjectRoot());
  const r = await c.request<{ notes: Note[]; size: number }>("GET", "/api/memory");
  if (asJson) return printJson(r);
  if (!r.notes.length) return print('The project\'s memory is empty: lazy memory add "a fact every task should know".');
  for (const n of r.notes)
    print(
      `${String(n.id).padStart(3)}. ${n.text}  (${n.by === "agent" ? `agent${n.taskId ? ` of ${n.taskId.slice(0, 8)}` : ""}` : n.by}, ${n.at.slice(0, 10)})`,
    );
};

const add = command({
  meta: { name: "memory add", description: "Add a note to the project's memory" },
  args: { text: { type: "positional", description: "One short fact", required: true }, ...jsonArg },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const n = await c.request<Note>("POST", "/api/memory", { text: args.text });
    if (args.json) return printJson(n);
    say.success(`Kept as note ${n.id}.`);
  },
});

const rm = command({
  meta: { name: "memory rm", description: "Remove a note from the project's memory by its number" },
  args: { n: { type: "positional", description: "The note's number (lazy memory lists them)", required: true }, ...jsonArg },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const n = await c.request<Note>("DELETE", `/api/memory/${encodeURIComponent(args.n)}`);
    if (args.json) return printJson(n);
    say.success(`Removed note ${n.id}: ${n.text}`);
  },
});

const ls = command({
  meta: { name: "memory list", description: "List the project's memory" },
  args: jsonArg,
  run: ({ args }) => list(Boolean(args.json)),
});

export const memory = command({
  meta: { name: "memory", description: "The project's memory: short notes agents and people keep (list, add, rm)" },
  args: jsonArg,
  subCommands: { list: ls, add, rm },
  run: ({ args, rawArgs }) =>
    rawArgs.some((a) => !a.startsWith("-") && ["list", "add", "rm"].includes(a)) ? undefined : list(Boolean(args.json)),
});
