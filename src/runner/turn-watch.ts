/**
 * Reading a running turn: the supervisor's files in the task's turn folder (agent-written, so
 * read through AgentDir, bounded, no link followed), polled every 200 ms. Each event line is
 * recorded; exit.json ends the turn, which brings the agent's commits onto the task's branch
 * and settles the task (done, failed, or waiting: stopped, over budget, or asking the human).
 * A turn whose container or supervisor dies without an exit.json fails (checked every 2 s).
 * Every end releases the task's grants and stops its container (checked) before it settles,
 * and what one turn may store of its events is bounded (TURN_EVENTS, TURN_BYTES).
 */
import { join } from "node:path";
import * as AgentDir from "../agent-dir";
import { type Config, resolveProfile } from "../config";
import { BIN, Image } from "../containers";
import * as Git from "../git";
import * as Harness from "../harness";
import type { Heard } from "../mcp";
import type { Budgets } from "../spending";
import { type Run, Runs, type Status, type Task, Tasks } from "../store";
import { type Exit, FILES } from "../supervisor";
import type { TaskAccess } from "./task-access";

/** How much of a turn's events one poll reads, and the longest event line kept. */
const READ_CHUNK = 4 * 1024 * 1024;
/**
 * What one turn may put into the store from its events.jsonl: events stored, and bytes read. A
 * long real turn stays far below both (hundreds of tool calls make a few thousand events, a few
 * MB); past them lazy keeps only the turn's result and session, skips the rest unread, and
 * records one `dropped` event with the counts when the turn ends. The turn is not failed for it:
 * the agent's work (its commits) is what the turn is for, and its exit still says how it ended.
 */
export const TURN_EVENTS = 10_000;
export const TURN_BYTES = 64 * 1024 * 1024;
/** Result events kept past TURN_EVENTS (a flood of fake results is bounded too). */
const EXTRA_RESULTS = 16;
/** How many READ_CHUNKs one poll reads at most. */
const POLL_CHUNKS = 2;
/** exit.json is a few fields; anything larger is not the supervisor's. */
const MAX_EXIT = 64 * 1024;

export interface TurnWatchDeps extends TaskAccess {
  config: () => Config;
  budgets: Pick<Budgets, "waitFor">;
  /** The turn ended: its grants stop redeeming (before anything else happens). */
  release: (taskId: string) => void;
  /** The turn ended: stop the task's container, checked; what is still wrong, if anything. */
  halt: (task: Task) => Promise<string | undefined>;
  /** The turn ended on a remote engine: its objects and ref come to the host first (remote/ship.ts); what was not. */
  bringBack: (task: Task) => Promise<string[]>;
  /** A remote turn's folder, read to the host once more now (its mirror polls every 500 ms). */
  readTurn: (task: Task, containerId: string, turn: number) => Promise<void>;
  /** What lazy's MCP route last did with the task's token (mcp lastHeard), and since when it has kept count (its process's start). */
  heard: (taskId: string) => { last: Heard | undefined; since: number };
  /** The turn's commits landed on lazy/<task> (from its tip before the turn to `to`): write their trace records (provenance.ts). */
  trace: (task: Task, turn: number, from: string, to: string) => Promise<void>;
}

export class TurnWatch {
  private watchers = new Map<string, Timer>();
  /** The running turn's supervisor, per task (this daemon's launches; a restart checks the container). */
  private execs = new Map<string, string>();
  /** Turns that ended and are being settled (their container stopped first). */
  private ending = new Map<string, symbol>();
  /** Per task, this turn's events stored and what was dropped past the bounds. */
  private counts = new Map<string, { turn: number; stored: number; events: number; bytes: number }>();

  constructor(private d: TurnWatchDeps) {}

  /** Whether this daemon follows the task's turn now. */
  has(taskId: string): boolean {
    return this.watchers.has(taskId);
  }

  /** Follow a turn this daemon launched: its supervisor is `execId`. */
  follow(task: Task, execId: string): void {
    this.execs.set(task.id, execId);
    this.watch(task);
  }

  /** Stop following every turn (the daemon stops; a restarted one picks them up). */
  stopAll(): void {
    for (const id of [...this.watchers.keys()]) this.unwatch(id);
  }

  private run(taskId: string): Run {
    return Runs.get(this.d.db, taskId);
  }

  private save(taskId: string, patch: Runs.RunPatch): void {
    Runs.save(this.d.db, taskId, patch);
  }

  /** Follow a running turn's files until it ends. */
  watch(task: Task): void {
    if (this.watchers.has(task.id)) return;
    let ticks = 0;
    let checking = false;
    const tick = () => {
      try {
        if (this.poll(task.id)) return this.unwatch(task.id);
      } catch (e) {
        this.d.log.error(`watching task ${task.id}: ${(e as Error).message}`);
      }
      // Every 2 s: a turn whose container or supervisor is gone without an exit.json (the agent
      // can kill either) ends as failed instead of hanging in running.
      if (++ticks % 10 || checking) return;
      checking = true;
      void this.checkAlive(task.id)
        .catch((e) => this.d.log.warn(`checking task ${task.id}'s container: ${(e as Error).message}`))
        .finally(() => (checking = false));
    };
    this.watchers.set(task.id, setInterval(tick, 200));
  }

  private async checkAlive(taskId: string): Promise<void> {
    const run = this.run(taskId);
    const docker = await this.d.docker();
    const info = run.container_id ? await docker.inspect(run.container_id) : undefined;
    const execId = this.execs.get(taskId);
    const exec = info?.running && execId ? await docker.execState(execId) : undefined;
    let error: string | undefined;
    if (!info?.running) error = "the task's container is gone (stopped from inside, or removed)";
    else if (exec && !exec.running)
      error = `the turn's supervisor ended (exit ${exec.code ?? "unknown"}) without reporting how the turn ended`;
    // Its supervisor unknown (launched before a daemon restart) and still no turn folder a minute on: it never started.
    else if (!execId && !AgentDir.lstat(join(this.d.taskDir(Tasks.resolve(this.d.db, taskId)), "turns"), String(run.turn)))
      if (Date.now() - Date.parse(Tasks.resolve(this.d.db, taskId).updatedAt) > 60_000)
        error = "the turn's supervisor never started (no turn folder a minute after the launch)";
    if (!error) return;
    await Bun.sleep(500); // an exit.json written just before the end is read first
    // On a remote engine the host has what the mirror last brought: the end may be there, unread.
    if (docker.remote && run.container_id)
      await this.d
        .readTurn(Tasks.resolve(this.d.db, taskId), run.container_id, run.turn)
        .catch((e: unknown) => this.d.log.warn(`reading task ${taskId}'s turn once more: ${(e as Error).message}`));
    if (this.poll(taskId)) return this.unwatch(taskId);
    const task = Tasks.resolve(this.d.db, taskId);
    if (task.status !== "running") return this.unwatch(taskId);
    // The supervisor reported its end; its events are still being read (a few chunks a poll).
    if (AgentDir.lstat(join(this.d.taskDir(task), "turns"), `${run.turn}/${FILES.exit}`)?.isFile()) return;
    this.settle(
      task,
      false,
      { code: exec?.code ?? null, signal: null, at: new Date().toISOString(), error },
      "",
      run.stopped_turn === run.turn,
    );
    this.unwatch(taskId);
  }

  unwatch(id: string): void {
    clearInterval(this.watchers.get(id));
    this.watchers.delete(id);
    this.execs.delete(id);
  }

  /**
   * Read what the supervisor wrote since last time; settle the turn when it has ended. True
   * when done. The turn's folder is the agent's: read through AgentDir (no link followed,
   * bounded), and a link or special file there ends the turn as failed, with the reason.
   */
  poll(taskId: string): boolean {
    if (this.ending.has(taskId)) return true;
    const task = Tasks.resolve(this.d.db, taskId);
    if (task.status !== "running") return true;
    const run = this.run(taskId);
    let count = this.counts.get(taskId);
    if (count?.turn !== run.turn) {
      count = { turn: run.turn, stored: 0, events: 0, bytes: 0 };
      this.counts.set(taskId, count);
    }
    const turns = join(this.d.taskDir(task), "turns");
    const dir = String(run.turn);
    // No turn folder yet: the supervisor has not started (or never will: checkAlive says why).
    if (!AgentDir.lstat(turns, dir)) return false;
    try {
      const harness = resolveProfile(this.d.config(), run.profile ?? task.profile).harness;
      // Look for the end first: the supervisor writes exit.json after its last event line.
      const exitText = AgentDir.readText(turns, `${dir}/${FILES.exit}`, MAX_EXIT);
      let offset = run.offset;
      // At most POLL_CHUNKS chunks a poll (the daemon's thread has other work); the turn settles
      // only once its events are read up to the end.
      let chunks = 0;
      let behind = false;
      for (;;) {
        if (chunks++ >= POLL_CHUNKS) {
          behind = true;
          break;
        }
        if (offset >= TURN_BYTES) {
          // Past the turn's bound: what comes after is skipped unread, and counted.
          const size = AgentDir.read(turns, `${dir}/${FILES.events}`, { max: 0, offset })?.size ?? offset;
          if (size > offset) {
            count.bytes += size - offset;
            offset = size;
            this.save(taskId, { offset });
          }
          break;
        }
        const want = Math.min(READ_CHUNK, TURN_BYTES - offset);
        const got = AgentDir.read(turns, `${dir}/${FILES.events}`, { max: want, offset });
        if (!got || got.data.length === 0) break;
        const end = got.data.lastIndexOf(10);
        if (end < 0) {
          if (got.data.length < want) break; // a line still being written
          offset += got.data.length;
          // A line longer than the bound is not an event lazy keeps; one cut by the turn's bound is dropped.
          if (want === READ_CHUNK) this.d.ledger.event(task, "refused", { reason: `an event line over ${READ_CHUNK} bytes was skipped` });
          else count.bytes += got.data.length;
          continue;
        }
        for (const line of got.data.subarray(0, end).toString("utf8").split("\n"))
          for (const e of Harness.parseEvent(harness, line)) {
            if (e.kind === "session") this.save(taskId, { session: e.data.id });
            else if (e.kind === "mcp") {
              if (e.data.status !== "connected") this.blind(task, run, harness, e.data.status);
            } else if (count.stored < TURN_EVENTS || (e.kind === "result" && count.stored < TURN_EVENTS + EXTRA_RESULTS)) {
              // Past the bound only the turn's result is kept (how it ended, what it says).
              count.stored++;
              this.d.ledger.event(task, e.kind, e.data);
            } else count.events++;
          }
        offset += end + 1;
        this.save(taskId, { offset });
        if (got.data.length < want) break; // the end of what is written
      }
      if (exitText === null || behind) return false;
      let exit: Exit;
      try {
        exit = JSON.parse(exitText) as Exit;
        if (typeof exit !== "object" || exit === null) throw new Error("not an object");
      } catch {
        exit = { code: null, signal: null, at: new Date().toISOString(), error: "the turn's exit.json is not what the supervisor writes" };
      }
      const all = Tasks.events(this.d.db, taskId);
      const turnStart = all.findLastIndex((e) => e.kind === "status" && e.data.to === "running");
      const last = all
        .slice(turnStart + 1)
        .filter((e) => e.kind === "result")
        .at(-1);
      // A turn stopped because lazy's MCP server did not connect failed, whatever its exit says.
      const blind = all.slice(turnStart + 1).find((e) => e.kind === "refused" && e.data.mcp === true);
      const ok = !blind && exit.code === 0 && (last ? last.data.ok !== false : true);
      const error = blind ? String(blind.data.reason) : typeof exit.error === "string" ? exit.error.slice(0, 2000) : undefined;
      this.settle(
        task,
        ok,
        {
          code: typeof exit.code === "number" ? exit.code : null,
          signal: blind ? null : typeof exit.signal === "string" ? exit.signal : null,
          at: String(exit.at),
          ...(error ? { error } : {}),
        },
        last ? String(last.data.text ?? "") : "",
        !blind && run.stopped_turn === run.turn,
      );
      return true;
    } catch (e) {
      if (!(e instanceof AgentDir.LinkRefused)) throw e;
      this.settle(task, false, { code: null, signal: null, at: new Date().toISOString(), error: e.message }, "", false);
      return true;
    }
  }

  /**
   * The harness says lazy's MCP server did not connect: the agent would work without lazy's tools
   * (no report_progress, no ask_human), so the turn is stopped and fails, saying why.
   */
  private blind(task: Task, run: Run, harness: string, status: string): void {
    // What lazy's side saw of it this turn: nothing at all is a network that does not reach the proxy.
    const started = Tasks.events(this.d.db, task.id).findLast((e) => e.kind === "status" && e.data.to === "running")?.at;
    const { last: h, since } = this.d.heard(task.id);
    const began = started === undefined ? undefined : Date.parse(started);
    const at = (ms: number) => `${new Date(ms).toISOString().slice(11, 19)} UTC`;
    const seen =
      !h || (began !== undefined && h.at < began)
        ? `lazy's MCP route got no request with the task's token ${began !== undefined && since > began ? `since lazy's daemon started at ${at(since)}, after this turn began` : "this turn"}: the container's connections did not reach lazy's proxy, or came without that token`
        : h.refused
          ? `lazy's MCP route refused the task's token: ${h.refused.replace(/\.$/, "")}`
          : h.status === undefined
            ? `lazy's MCP route admitted the task's token at ${at(h.at)} and had not answered it yet`
            : h.status >= 400
              ? `lazy's MCP route last answered the task's token with HTTP ${h.status}, at ${at(h.at)}`
              : `lazy's MCP route answered the task's token (HTTP ${h.status}, last at ${at(h.at)}), so ${harness} gave up on its side`;
    const reason = `lazy's MCP server did not connect in ${harness} (status: ${status}), so the turn was stopped rather than run without lazy's tools. ${seen}. lazy doctor says whether the proxy's listener is up and the project's network reaches it; then run the turn again (lazy send ${this.d.ledger.ref(task)} "…").`;
    this.d.ledger.event(task, "refused", { reason, mcp: true });
    this.d.log.warn(`task ${this.d.ledger.ref(task)}: ${reason}`);
    void this.signal(run, `task ${this.d.ledger.ref(task)}'s blind turn`);
  }

  /**
   * SIGTERM to the turn's harness, through lazy's own binary in the container (any image; no
   * kill binary needed). A failure is logged: the turn then ends by itself or by housekeeping.
   */
  async signal(run: Run, what: string): Promise<boolean> {
    if (!run.container_id) return false;
    const uid = Image.agentUid();
    try {
      const r = await (await this.d.docker()).exec(
        run.container_id,
        [BIN, "supervise", "--stop", `/lazy/turns/${run.turn}`],
        `${uid}:${uid}`,
      );
      if (r.code === 0) return true;
      this.d.log.warn(`stopping ${what}: the supervisor could not signal the harness (exit ${r.code}: ${r.output.trim().slice(0, 300)})`);
    } catch (e) {
      this.d.log.warn(`stopping ${what}: ${(e as Error).message}`);
    }
    return false;
  }

  /**
   * The turn ended: its grants stop redeeming at once; then its container is stopped (nothing
   * the agent started outlives its turn: checked, not assumed), and only then are its commits
   * imported and its status settled. poll() answers "ended" meanwhile.
   */
  private settle(task: Task, ok: boolean, exit: Exit, text: string, stoppedByUser: boolean): void {
    if (this.ending.has(task.id)) return;
    // Its own mark: the end is over at the status move (finish), and this one's later cleanup
    // must not take a next turn's mark.
    const mine = Symbol(task.id);
    this.ending.set(task.id, mine);
    const began = performance.now();
    this.d.release(task.id);
    void (async () => {
      const left = await this.d.halt(task).catch((e: unknown) => `stopping the task's container failed: ${(e as Error).message}`);
      if (left) {
        this.d.log.error(`task ${this.d.ledger.ref(task)}: processes of the agent may outlive its turn: ${left}`);
        this.d.ledger.event(task, "refused", { reason: `the turn ended but its container could not be stopped: ${left}` });
      }
      const lost = await this.d.bringBack(task).catch((e: unknown) => [`bringing the agent's commits back: ${(e as Error).message}`]);
      if (lost.length)
        this.d.ledger.event(task, "refused", {
          reason: `some of the agent's objects were not brought back: ${lost.slice(0, 5).join("; ")}`,
        });
      const count = this.counts.get(task.id);
      this.counts.delete(task.id);
      if (count && (count.events || count.bytes))
        this.d.ledger.event(task, "dropped", {
          events: count.events,
          bytes: count.bytes,
          reason: `the turn's events went past what one turn may store (${TURN_EVENTS} events, ${TURN_BYTES / 1024 / 1024} MiB read); the rest was dropped`,
        });
      await this.finish(task, ok, exit, text, stoppedByUser, began);
    })()
      .catch((e: unknown) => this.d.log.error(`settling task ${task.id}'s turn: ${(e as Error).message}`))
      .finally(() => {
        if (this.ending.get(task.id) === mine) this.ending.delete(task.id);
      });
  }

  /** Why this turn was stopped for disk (the `refused` event disk-bound.ts recorded), if it was. */
  private diskStop(task: Task): string | undefined {
    const all = Tasks.events(this.d.db, task.id);
    const turnStart = all.findLastIndex((e) => e.kind === "status" && e.data.to === "running");
    const e = all.slice(turnStart + 1).find((x) => x.kind === "refused" && typeof x.data.disk === "object" && x.data.disk !== null);
    return e ? String(e.data.reason) : undefined;
  }

  private async finish(task: Task, ok: boolean, exit: Exit, text: string, stoppedByUser: boolean, began: number): Promise<void> {
    let sync: { moved: boolean; from: string; tip: string; skipped: string[] } | undefined;
    try {
      const g = this.d.recordedGit(task);
      if (g) sync = Git.syncBranch(this.d.root, g, this.d.ledger.ref(task));
      if (sync?.skipped.length)
        this.d.ledger.event(task, "refused", {
          reason: `some of the agent's objects were not imported: ${sync.skipped.slice(0, 5).join("; ")}`,
        });
    } catch (e) {
      this.d.log.error(
        `task ${task.id}: bringing the agent's commits onto ${Git.BRANCH_PREFIX}${this.d.ledger.ref(task)} failed: ${(e as Error).message}`,
      );
    }
    const turn = this.run(task.id).turn;
    const stopped = stoppedByUser || exit.signal === "SIGTERM" || exit.signal === "SIGINT";
    // A budget reached during the turn (spending decides: budget-stops.ts).
    const budget = this.d.budgets.waitFor(task);
    // The agent asked the human something (MCP ask_human): the task waits for the answer.
    const question = this.run(task.id).question;
    // Its code (or id) goes with it: the line that says how to answer names the real task (src/lines).
    const asked = question && !budget ? { reason: "question", question, task: this.d.ledger.ref(task) } : null;
    // The disk bound (or a disk under lazy's floor) stopped it (disk-bound.ts): it waits for room.
    const disk = this.diskStop(task);
    const to: Status = stopped || budget || asked || disk ? "waiting" : ok ? "done" : "failed";
    this.d.ledger.move(task, to, {
      ...(budget ?? {}),
      ...(asked ?? {}),
      ...(disk ? { reason: "disk", detail: disk } : {}),
      exit: exit.code,
      signal: exit.signal,
      ...(stopped ? { stopped: true } : {}),
      ...(sync?.moved ? { branch: `${Git.BRANCH_PREFIX}${this.d.ledger.ref(task)}`, tip: sync.tip } : {}),
      ...(text ? { result: text.slice(0, 4000) } : {}),
      ...(disk ? { error: disk } : exit.error ? { error: exit.error } : {}),
    });
    // Its end's cost (bench/trace.ts reads this line).
    this.d.log.info(
      `task ${this.d.ledger.ref(task)} turn ended: ${to} (exit ${exit.code ?? exit.signal}); its end took ${(performance.now() - began).toFixed(1)} ms`,
    );
    // Each new commit's trace record, right after: the records never hold up the turn's end (a
    // few git runs, ~10 ms; a turn's end is ~140 ms on a quiet machine), and nothing needs them
    // before the status moves. The task's ending is over first, so a next turn started meanwhile
    // is followed as any other; each turn's facts are its own (runner/provenance.ts).
    this.ending.delete(task.id);
    if (sync?.moved)
      await this.d
        .trace(task, turn, sync.from, sync.tip)
        .catch((e: unknown) =>
          this.d.log.warn(`task ${this.d.ledger.ref(task)}: its trace records were not written: ${(e as Error).message}`),
        );
  }
}
