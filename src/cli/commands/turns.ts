import { line, slotText } from "../../lines";
import type { Task, TaskEvent } from "../../store";
import { type ErrorCode, LazyError } from "../../util/errors";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson, printJsonLine, setExitCode } from "../command";
import { whileLaunching } from "../progress";
import { promptArgs, promptFrom } from "../prompt-input";
import { type Reviewed, reviewArg, reviewFile } from "../review";
import { say } from "../voice";
import { groupAndPrompt, groupArgs, runGroup } from "./compare";

const taskArg = { task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true } } as const;
const enc = encodeURIComponent;

/** What `lazy start`/`send` say of the task after the request: its status, and why it waits when held. */
async function after(c: Client.Client, t: Task, follow: boolean): Promise<string> {
  const ref = t.code ?? t.id;
  if (t.status === "queued") {
    const r = await c.request<{ events: TaskEvent[] }>("GET", `/api/tasks/${t.id}`);
    const d = r.events.findLast((e) => e.kind === "status" || e.kind === "queued" || e.kind === "created")?.data;
    if (d?.reason === "max_running") return `Task ${ref}: queued — ${slotText(d)}.`;
  }
  if (t.status === "waiting") {
    const r = await c.request<{ events: TaskEvent[] }>("GET", `/api/tasks/${t.id}`);
    const d = r.events.findLast((e) => e.kind === "status" || e.kind === "held")?.data;
    if (d?.reason === "usage_pause")
      return `Task ${ref}: waiting — held by [usage_pause]: ${d.credential}'s ${d.detail}; it starts by itself at ${d.resetsAt}.`;
  }
  return `Task ${ref}: ${t.status}${follow && t.status === "running" ? ` (follow it: lazy logs ${ref} -f)` : ""}`;
}

const simple = (name: "start" | "stop" | "reject" | "close", description: string) =>
  command({
    meta: { name, description },
    args: { ...taskArg, ...jsonArg },
    async run({ args }) {
      const c = await (name === "start" ? Client.launching : Client.connect)(findProjectRoot());
      const post = () => c.request<Task>("POST", `/api/tasks/${enc(args.task)}/${name}`, undefined, 30 * 60_000);
      let t = name === "start" ? (await whileLaunching(c, args.task, post)).result : await post();
      // A stop is a signal: the turn ends a moment later (its harness exits, its commits are brought in).
      if (name === "stop") t = await stopped(c, t);
      if (args.json) printJson(t);
      else if (name === "stop") print(stopLine(t));
      else print(await after(c, t, name === "start"));
    },
  });

/** The task once its stopped turn has ended (or after 15 s, still ending). */
async function stopped(c: Client.Client, t: Task): Promise<Task> {
  const until = Date.now() + 15_000;
  let now = t;
  while (now.status === "running" && Date.now() < until) {
    await Bun.sleep(200);
    now = (await c.request<{ task: Task }>("GET", `/api/tasks/${t.id}`)).task;
  }
  return now;
}

function stopLine(t: Task): string {
  const ref = t.code ?? t.id;
  if (t.status === "running") return `Asked task ${ref}'s turn to stop; it is still ending (lazy logs ${ref} -f shows when).`;
  if (t.status === "queued") return `Took task ${ref}'s turn out of the queue: it does not start (lazy start ${ref} queues it again).`;
  return `Stopped task ${ref}'s turn: it is ${t.status}${t.status === "waiting" ? ` (lazy send ${ref} "…" goes on; lazy close ${ref} ends it)` : ""}.`;
}

export const start = simple("start", "Run the task's first (or next) turn in its container");
export const stop = simple("stop", "Stop the task's running turn");
export const close = simple("close", "End the task's session, keeping its branch");

export const send = command({
  meta: { name: "send", description: "Run the task's next turn in the same session, with a message" },
  args: {
    ...taskArg,
    ...promptArgs("message", "What to tell the agent"),
    ...reviewArg,
    ...jsonArg,
  },
  async run({ args }) {
    if (args.review !== undefined) return sendReview(args.task, args.review, args.message, args.file, args.json);
    const message = await promptFrom("message", args.message, args.file);
    const c = await Client.launching(findProjectRoot());
    const { result: t } = await whileLaunching(c, args.task, () =>
      c.request<Task>("POST", `/api/tasks/${enc(args.task)}/send`, { message }, 30 * 60_000),
    );
    if (args.json) printJson(t);
    else print(await after(c, t, true));
  },
});

/** `lazy send T --review F [MESSAGE]`: the comments checked and sent by the daemon (routes/review.ts). */
async function sendReview(task: string, file: string, text: string | undefined, msgFile: string | undefined, asJson?: boolean) {
  if (file === "-" && (text === "-" || msgFile === "-"))
    throw new LazyError("invalid_input", "Standard input can carry the review or the message, not both.");
  const comments = await reviewFile(file);
  const message = text !== undefined || msgFile !== undefined ? await promptFrom("message", text, msgFile) : undefined;
  const c = await Client.connect(findProjectRoot());
  const { result: r } = await whileLaunching(c, task, () =>
    c.request<Reviewed>("POST", `/api/tasks/${enc(task)}/review`, { comments, ...(message ? { message } : {}) }, 30 * 60_000),
  );
  if (asJson) return printJson(r);
  say.success(`Sent ${r.comments} review comment(s) to ${r.task.code ?? r.task.id}.`);
  print(await after(c, r.task, true));
}

export const accept = command({
  meta: { name: "accept", description: "Merge the task's branch into the project's branch and end its session" },
  args: {
    ...taskArg,
    "with-config": {
      type: "boolean",
      description:
        "Merge even though the branch changes config (lazy.toml at any depth, harness folders, Dockerfiles; look at that change first)",
    },
    ...jsonArg,
  },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const r = await c.request<{
      task: Task;
      commits: string[];
      summary: string | null;
      summaryError: string | null;
      config: string[];
      closed?: string[];
    }>("POST", `/api/tasks/${enc(args.task)}/accept`, args["with-config"] ? { withConfig: true } : undefined, 15 * 60_000);
    if (args.json) return printJson(r);
    say.success(`Accepted ${r.task.code ?? r.task.id}: ${r.commits.length} commit(s) merged.`);
    if (r.closed?.length)
      print(`Closed the other candidates of group ${r.task.group}: ${r.closed.join(", ")} (their branches stay until you delete them).`);
    for (const c of r.commits) print(`  ${c}`);
    if (r.summary) print(`\n${r.summary}`);
    if (r.summaryError) say.warn(`The merge has no summary: ${r.summaryError}`);
    const tomls = r.config.filter((f) => f === "lazy.toml" || f.endsWith("/lazy.toml"));
    if (tomls.length)
      say.warn(`It merged ${tomls.join(", ")}: lazy uses a new or changed lazy.toml only once you approve it (lazy trust in its folder).`);
  },
});

export const logs = command({
  meta: { name: "logs", description: "Show what the task's agent did: messages, tool calls, results" },
  args: { ...taskArg, follow: { type: "boolean", alias: "f", description: "Keep printing until the turn ends" }, ...jsonArg },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    let after = 0;
    for (;;) {
      const r = await c.request<{ task: Task; events: TaskEvent[] }>("GET", `/api/tasks/${enc(args.task)}/events?after=${after}`);
      for (const e of r.events) {
        if (args.json) printJsonLine(e);
        else print(line(e));
        after = e.id;
      }
      if (!args.follow || r.task.status !== "running") return;
      await Bun.sleep(300);
    }
  },
});

/** `lazy run` exit codes: one per kind of failure, so CI can tell them apart. */
export const RUN_EXIT = { done: 0, agentFailed: 3, launchRefused: 4, credentialMissing: 5, proxyUnavailable: 6, paused: 7 } as const;
const exitFor = (code: ErrorCode) =>
  code === "credential_missing"
    ? RUN_EXIT.credentialMissing
    : code === "proxy_unavailable"
      ? RUN_EXIT.proxyUnavailable
      : RUN_EXIT.launchRefused;

export const run = command({
  meta: {
    name: "run",
    description:
      "One-shot for CI: add a task, run its turn, wait, print the result. Exit codes: 0 the turn finished; 3 the agent failed; 4 the launch was refused; 5 a credential is missing; 6 the proxy is unavailable; 7 held by [usage_pause] (the reset time is printed; --wait waits for it); 2 bad usage. With --profiles or --n (best-of-N): every candidate runs at once, then lazy compare's table; 0 when at least one finished (and passed [review] check, when set), 3 when none did, 7 when none did and some are held, 4-6 when every launch was refused",
  },
  args: {
    ...promptArgs("prompt", "What the agent should do"),
    profile: { type: "string", description: "Agent profile" },
    ...groupArgs,
    code: { type: "string", description: "A code for the task (with --profiles: the group's)" },
    wait: { type: "boolean", description: "When [usage_pause] holds the turn, wait for the reset instead of exiting 7" },
    ...jsonArg,
  },
  async run({ args }) {
    const { group, prompt, c } = await groupAndPrompt(args);
    if (group)
      return runGroup(c, { prompt, code: args.code, ...group }, { json: !!args.json, wait: !!args.wait }, { ...RUN_EXIT, exitFor });
    const t = await c.request<Task>("POST", "/api/tasks", { prompt, profile: args.profile, code: args.code }, Client.LAUNCH_TIMEOUT_MS);
    let after = 0;
    try {
      after = (await whileLaunching(c, t.id, () => c.request<Task>("POST", `/api/tasks/${t.id}/start`, undefined, 30 * 60_000))).after;
    } catch (e) {
      if (!(e instanceof LazyError)) throw e;
      say.error([e.message, ...e.details.map((d) => `  ${d}`)].join("\n"));
      const now = await c.request<{ task: Task }>("GET", `/api/tasks/${t.id}`).then(
        (r) => r.task,
        () => t,
      );
      if (args.json) printJson({ task: now, status: "refused", error: { code: e.code, message: e.message, details: e.details } });
      return setExitCode(exitFor(e.code));
    }
    let task = t;
    const messages: string[] = [];
    let result = "";
    let held: Record<string, unknown> | null = null;
    for (;;) {
      const r = await c.request<{ task: Task; events: TaskEvent[] }>("GET", `/api/tasks/${t.id}/events?after=${after}`);
      for (const e of r.events) {
        after = e.id;
        if (e.kind === "message") messages.push(String(e.data.text));
        if (e.kind === "result") result = String(e.data.text ?? "");
        if (e.kind === "status") held = e.data.reason === "usage_pause" ? e.data : null;
        if (!args.json) say.info(line(e));
      }
      task = r.task;
      if (held && task.status === "waiting") {
        if (!args.wait) {
          const text = `Task ${t.code ?? t.id} is held by [usage_pause]: ${held.credential}'s ${held.detail ?? `${held.window} window`}; it starts by itself at ${held.resetsAt} (lazy run --wait waits for it).`;
          if (args.json) printJson({ task, status: "paused", resetsAt: held.resetsAt, credential: held.credential, window: held.window });
          else say.warn(text);
          return setExitCode(RUN_EXIT.paused);
        }
      } else if (task.status !== "running" && task.status !== "queued") break;
      await Bun.sleep(250);
    }
    const ok = task.status === "done" || task.status === "waiting";
    if (args.json) printJson({ task, status: task.status, result: result || messages.at(-1) || "" });
    else print(result || messages.at(-1) || `(task ${task.id} ${task.status})`);
    setExitCode(ok ? RUN_EXIT.done : RUN_EXIT.agentFailed);
  },
});
