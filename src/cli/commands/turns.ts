import type { TaskRow } from "../../dashboard";
import type { Diff } from "../../diff";
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

/**
 * `lazy run` exit codes: one per kind of outcome, so CI can tell them apart (the run command's
 * description says them all; README's "lazy run for CI" too).
 */
export const RUN_EXIT = {
  done: 0,
  usage: 2,
  agentFailed: 3,
  launchRefused: 4,
  credentialMissing: 5,
  proxyUnavailable: 6,
  paused: 7,
  question: 8,
  /** lazy's own fault (the daemon's `internal` error), as every command's unexpected error (cli/index.ts). */
  internal: 70,
  interrupted: 130,
} as const;
const exitFor = (code: ErrorCode) =>
  code === "credential_missing"
    ? RUN_EXIT.credentialMissing
    : code === "proxy_unavailable"
      ? RUN_EXIT.proxyUnavailable
      : RUN_EXIT.launchRefused;

/**
 * A refusal of `lazy run`, before or after its task is made: the words on stderr, and under
 * --json the one JSON document on stdout (`status: "refused"`, the error's code), so a `| jq`
 * pipeline sees it. Bad usage exits 2; the rest as exitFor says (4 when untrusted).
 */
function refuseRun(e: LazyError, json: boolean, task?: Task): number {
  say.error([e.message, ...e.details.map((d) => `  ${d}`)].join("\n"));
  if (json)
    printJson({
      ...(task ? { task } : {}),
      status: "refused",
      error: { code: e.code, message: e.message, details: e.details, ...(e.facts ? { facts: e.facts } : {}) },
    });
  return e.code === "invalid_input" ? RUN_EXIT.usage : e.code === "internal" ? RUN_EXIT.internal : exitFor(e.code);
}

/** What a person does next with a task whose turn ended in `status` (on stderr: words, not data). */
function nextSteps(t: Task, question: boolean): string {
  const ref = t.code ?? t.id;
  if (question) return `Answer it: lazy send ${ref} "…" (lazy diff ${ref} shows the work so far; lazy close ${ref} ends it).`;
  if (t.status === "done" || t.status === "waiting")
    return `Next: lazy diff ${ref} to review, lazy accept ${ref} to merge, lazy reject ${ref} to drop it, lazy send ${ref} "…" to go on.`;
  return `Next: lazy logs ${ref} shows what happened; lazy start ${ref} runs the turn again; lazy close ${ref} ends it.`;
}

/**
 * Ctrl-C while `lazy run` waits: the first asks the daemon to stop the turn (as lazy stop does);
 * lazy run goes on following it to its end, says what it is then, and exits 130. A second exits
 * at once, leaving the turn to end (or run) on its own, and says how to follow or stop it.
 */
function onInterrupt(c: Client.Client, t: Task, json: boolean): Interrupt {
  const ref = t.code ?? t.id;
  const state: Interrupt = { asked: false, pending: false, release: () => process.off("SIGINT", handler) };
  const handler = () => {
    if (state.asked) {
      say.warn(`Not waiting: task ${ref}'s turn is left as it is. Follow it: lazy logs ${ref} -f; stop it: lazy stop ${ref}.`);
      // --json's one document still: the task as lazy run last knew it, left running.
      if (json) printJson({ task: t, status: "left", interrupted: true });
      process.exit(RUN_EXIT.interrupted);
    }
    state.asked = true;
    say.warn(`Stopping task ${ref}'s turn (Ctrl-C again leaves it running)…`);
    void stopTurn(c, t, state);
  };
  process.on("SIGINT", handler);
  return state;
}

interface Interrupt {
  /** Ctrl-C was pressed once: the turn is (to be) stopped, and lazy run exits 130. */
  asked: boolean;
  /** The stop came while the task was still launching (queued): it is sent once the turn runs. */
  pending: boolean;
  release: () => void;
}

/** Ask the daemon to stop the turn; a task still launching is not running yet, so the stop waits for it. */
async function stopTurn(c: Client.Client, t: Task, state: Interrupt): Promise<void> {
  const ref = t.code ?? t.id;
  try {
    await c.request<Task>("POST", `/api/tasks/${t.id}/stop`);
  } catch (e) {
    const now = await c.request<{ task: Task }>("GET", `/api/tasks/${t.id}`).then(
      (r) => r.task.status,
      () => undefined,
    );
    if (e instanceof LazyError && e.code === "conflict" && now === "queued") {
      state.pending = true;
      say.warn(`Task ${ref} is still launching: its turn is stopped as soon as it starts.`);
    } else say.error(`Could not stop task ${ref}'s turn: ${(e as Error).message} Ctrl-C again leaves it; lazy stop ${ref} stops it later.`);
  }
}

/** What the success document adds about the work: the branch, its tip, the diffstat, tokens and cost (null when unknown). */
async function workOf(c: Client.Client, t: Task) {
  const [diff, row] = await Promise.all([
    c.request<Diff>("GET", `/api/tasks/${t.id}/diff?stat=1`).catch(() => null),
    c.request<{ task: TaskRow }>("GET", `/api/board/tasks/${t.id}`).catch(() => null),
  ]);
  return {
    branch: diff?.branch ?? null,
    tip: diff?.tip ?? null,
    diffstat: diff ? { files: diff.total.files, insertions: diff.total.added, deletions: diff.total.removed } : null,
    tokens: row?.task.tokens ?? null,
    usd: row?.task.usd ?? null,
    unpriced: row?.task.unpriced ?? [],
  };
}

export const run = command({
  meta: {
    name: "run",
    description:
      'One-shot for CI: add a task, run its turn, wait, print the result (the task\'s code and the next commands go to stderr). Exit codes: 0 the turn finished; 3 the agent failed; 4 the launch was refused (also an untrusted lazy.toml); 5 a credential is missing; 6 the proxy is unavailable; 7 held by [usage_pause] (the reset time is printed; --wait waits for it); 8 the agent asked a question and the task waits for your answer (lazy send CODE "…"); 130 interrupted (Ctrl-C asks the turn to stop; a second Ctrl-C leaves it running); 2 bad usage; 70 an internal error (a bug: lazy daemon logs). --json prints one JSON document whatever happens, a refusal included (status "refused" and the error\'s code). With --profiles or --n (best-of-N): every candidate runs at once, then lazy compare\'s table; 0 when at least one finished (and passed [review] check, when set and the check fails on the untouched base), 3 when none did, 7 when none did and some are held, 4-6 when every launch was refused',
  },
  args: {
    ...promptArgs("prompt", "What the agent should do"),
    profile: { type: "string", description: "Agent profile" },
    ...groupArgs,
    code: { type: "string", description: "A code for the task (with --profiles: the group's)" },
    wait: { type: "boolean", description: "When [usage_pause] holds the turn, wait for the reset instead of exiting 7" },
    ...jsonArg,
  },
  refuse: (e, args) => refuseRun(e, !!args.json),
  async run({ args }) {
    const { group, prompt, c } = await groupAndPrompt(args);
    if (group)
      return runGroup(c, { prompt, code: args.code, ...group }, { json: !!args.json, wait: !!args.wait }, { ...RUN_EXIT, exitFor });
    const t = await c.request<Task>("POST", "/api/tasks", { prompt, profile: args.profile, code: args.code }, Client.LAUNCH_TIMEOUT_MS);
    const ref = t.code ?? t.id;
    say.info(`Task ${ref}${t.code ? ` (id ${t.id})` : ""} added on profile ${t.profile}.`);
    const interrupt = onInterrupt(c, t, !!args.json);
    try {
      await follow(c, t, !!args.json, !!args.wait, interrupt);
    } finally {
      interrupt.release();
    }
  },
});

/** `lazy run`'s one task from its launch to the end of its turn: what it prints and its exit code. */
async function follow(c: Client.Client, t: Task, json: boolean, wait: boolean, interrupt: Interrupt): Promise<void> {
  const ref = t.code ?? t.id;
  let after = 0;
  try {
    after = (await whileLaunching(c, t.id, () => c.request<Task>("POST", `/api/tasks/${t.id}/start`, undefined, 30 * 60_000))).after;
  } catch (e) {
    if (!(e instanceof LazyError)) throw e;
    const now = await c.request<{ task: Task }>("GET", `/api/tasks/${t.id}`).then(
      (r) => r.task,
      () => t,
    );
    return setExitCode(refuseRun(e, json, now));
  }
  let task = t;
  const messages: string[] = [];
  let result = "";
  let held: Record<string, unknown> | null = null;
  let ended: Record<string, unknown> = {};
  for (;;) {
    const r = await c.request<{ task: Task; events: TaskEvent[] }>("GET", `/api/tasks/${t.id}/events?after=${after}`);
    for (const e of r.events) {
      after = e.id;
      if (e.kind === "message") messages.push(String(e.data.text));
      if (e.kind === "result") result = String(e.data.text ?? "");
      if (e.kind === "status") {
        held = e.data.reason === "usage_pause" ? e.data : null;
        ended = e.data;
      }
      if (!json) say.info(line(e));
    }
    task = r.task;
    if (interrupt.pending && task.status === "running") {
      interrupt.pending = false;
      await stopTurn(c, task, interrupt);
    }
    if (held && task.status === "waiting") {
      if (!wait) {
        const text = `Task ${ref} is held by [usage_pause]: ${held.credential}'s ${held.detail ?? `${held.window} window`}; it starts by itself at ${held.resetsAt} (lazy run --wait waits for it).`;
        if (json) printJson({ task, status: "paused", resetsAt: held.resetsAt, credential: held.credential, window: held.window });
        else say.warn(text);
        return setExitCode(RUN_EXIT.paused);
      }
    } else if (task.status !== "running" && task.status !== "queued") break;
    await Bun.sleep(250);
  }
  // The turn ended asking the person something (ask_human): the task waits for the answer.
  const question = task.status === "waiting" && ended.reason === "question" ? String(ended.question ?? "") : null;
  const text = result || messages.at(-1) || "";
  const stopped = interrupt.asked;
  if (json)
    printJson({
      task,
      status: task.status,
      result: text,
      ...(question !== null ? { question } : {}),
      ...(stopped ? { interrupted: true } : {}),
      ...(await workOf(c, task)),
    });
  else print(text || `(task ${ref} ${task.status})`);
  if (stopped) say.warn(stopLine(task));
  // The question itself is in the event line above, its lines indented (src/lines): an agent's text
  // is never a line of lazy's own.
  else if (question !== null) say.warn(`Task ${ref} asked a question and waits for your answer.`);
  say.info(nextSteps(task, question !== null));
  setExitCode(
    stopped
      ? RUN_EXIT.interrupted
      : question !== null
        ? RUN_EXIT.question
        : task.status === "done" || task.status === "waiting"
          ? RUN_EXIT.done
          : RUN_EXIT.agentFailed,
  );
}
