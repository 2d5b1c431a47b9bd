/**
 * Keeping statuses honest against what Docker has: a restarted daemon finds its containers by
 * label and reconciles every task (a running task whose turn ended is settled, one whose
 * container is gone fails, containers of ended or unknown tasks go), periodically too; a turn's
 * container is halted when the turn ends; `lazy daemon stop` leaves nothing of the project running.
 */
import type { Runtime } from "../containers";
import type { Egress } from "../egress";
import type { OwnCalls } from "../own-calls";
import { isFinal, Runs, type Task, Tasks } from "../store";
import type { LazyError } from "../util/errors";
import type { Lifecycle } from "./task-access";
import type { TurnWatch } from "./turn-watch";

export interface ReconcileDeps extends Lifecycle {
  egress: Pick<Egress, "unlisten">;
  turns: () => TurnWatch;
  calls: OwnCalls;
}

export class Reconciler {
  constructor(private d: ReconcileDeps) {}

  private ref(t: Task): string {
    return this.d.ledger.ref(t);
  }

  /**
   * A turn ended (or a container runs with no turn): stop the task's container so nothing the
   * agent started runs on, and check it stopped (Runtime.halt kills harder when it did not).
   * Stopping it whole is what holds: the agent has root in its container, so a process-by-process
   * kill can be raced by a forking loop; its pid namespace ends with its init. The next turn
   * starts the same container again. What is still wrong, if anything.
   */
  async halt(task: Task): Promise<string | undefined> {
    const id = Runs.get(this.d.db, task.id).container_id;
    if (!id) return undefined;
    const docker = await this.d.project.docker();
    if (!(await docker.inspect(id))?.running) return undefined;
    // Its address stops redeeming first: once it stops, Docker may give it to another container.
    await this.d.proxy.unpinTask(task.id);
    return docker.halt(id);
  }

  /**
   * Keep statuses honest: a running task whose turn ended is settled, one whose container is gone
   * fails, and containers of ended or unknown tasks are removed. Runs at start and periodically.
   */
  async reconcile(): Promise<void> {
    let docker: Runtime;
    try {
      docker = await this.d.project.docker();
    } catch {
      return; // no engine: nothing to reconcile against; doctor says so
    }
    const turns = this.d.turns();
    const all = await docker.list(this.d.slug);
    // lazy's own calls in flight are not a task's; one left by a daemon that died is an orphan.
    const containers = all.filter((c) => !this.d.calls.isCall(c.name));
    const orphans = all.filter((c) => this.d.calls.isCall(c.name) && !this.d.calls.active.has(c.name));
    for (const c of orphans) await docker.remove(c.id);
    // Their folders too, once the containers are gone (not before: a live one could still write there).
    const left = orphans.length ? await docker.list(this.d.slug) : all;
    this.d.calls.sweep(new Set(left.map((c) => c.name)));
    const running = Tasks.list(this.d.db, { status: "running" });
    // Containers that outlived a daemon still talk to the proxy at the network's gateway, and
    // their network's firewall rules are put back if Docker or a firewall reload flushed them
    // (or taken away when the config now allows metadata).
    let hijacked: string | undefined;
    if (containers.some((c) => c.running) && !this.d.starting.size) {
      let gateway: string | undefined;
      try {
        gateway = (await this.d.project.ensureNetwork(docker, this.d.config())).gateway;
      } catch (e) {
        this.d.log.error(`the project's network: ${(e as Error).message}`);
        // Setting its fence asks the proxy to listen there: the same refusal as below.
        if ((e as LazyError).code === "proxy_unavailable") hijacked = (e as Error).message;
      }
      // A remote engine's gateway is not this host's: its containers reach [proxy] remote_bind.
      const at = docker.remote ? this.d.config().proxy.remote_bind : gateway;
      if (at && docker.kind !== "desktop")
        try {
          await this.d.proxy.listenFor(at);
        } catch (e) {
          this.d.log.error(`the proxy cannot listen for the project's containers: ${(e as Error).message}`);
          // Their proxy address is another process's now: their turns end here rather than be
          // answered by it (proxy/index.ts listenFor).
          if ((e as LazyError).code === "proxy_unavailable") hijacked = (e as Error).message;
        }
    }
    for (const task of running) {
      if (turns.has(task.id) || this.d.starting.has(task.id)) continue;
      const c = containers.find((x) => x.taskId === task.id);
      if (turns.poll(task.id)) continue;
      if (!c?.running) {
        this.d.ledger.move(task, "failed", { error: "the task's container is gone" });
        continue;
      }
      if (hijacked) {
        await this.d.proxy.unpinTask(task.id);
        const left = await docker.halt(c.id);
        if (left) this.d.log.error(`task ${this.ref(task)}: ${left}`);
        this.d.ledger.move(task, "failed", { error: hijacked });
        this.d.proxy.release(task.id, "turn");
        continue;
      }
      turns.watch(task);
      if (docker.remote) this.d.remote.mirror(task, c.id, Runs.get(this.d.db, task.id).turn);
    }
    for (const c of containers) {
      let task: Task | undefined;
      try {
        task = c.taskId ? Tasks.resolve(this.d.db, c.taskId) : undefined;
      } catch {}
      if (!task || isFinal(task.status)) {
        this.d.log.info(`removing orphan container ${c.name}`);
        await docker.remove(c.id);
      } else if (c.running && task.status !== "running" && !this.d.starting.has(task.id) && !turns.has(task.id)) {
        // No turn runs, so nothing of the agent's may (a turn that ended while no daemon watched,
        // or a container from before turns stopped theirs).
        const now = Tasks.resolve(this.d.db, task.id);
        if (now.status === "running" || this.d.starting.has(task.id)) continue;
        this.d.log.warn(`task ${this.ref(task)} has no running turn but its container runs: stopping it`);
        await this.d.proxy.unpinTask(task.id);
        const left = await docker.halt(c.id);
        if (left) this.d.log.error(`task ${this.ref(task)}: ${left}`);
      }
    }
    await this.dropIdleNetwork().catch((e) => this.d.log.warn(`could not remove the project's idle network: ${(e as Error).message}`));
  }

  async dropIdleNetwork(): Promise<void> {
    // A turn or a call being set up is about to use it (asked again after the list: one may have
    // begun meanwhile; Docker itself refuses to remove a network a container is on).
    if (this.d.starting.size || this.d.calls.busy) return;
    const docker = await this.d.project.docker();
    if ((await docker.list(this.d.slug)).length || this.d.starting.size || this.d.calls.busy) return;
    const gateway = await docker.removeNetwork(this.d.slug, this.d.project.networkOptions(this.d.config()));
    if (gateway) this.d.proxy.unlisten(gateway);
    if (gateway) this.d.egress.unlisten(gateway);
  }

  /**
   * lazy daemon stop: nothing of the project runs after it. Task containers are stopped, not
   * removed (the next turn docker-starts one, its disk as the agent left it: installed packages
   * stay), and the project's network goes: a stopped container holds no address, and Docker
   * attaches it to the network made anew when it starts again. Called after shutdown().
   */
  async quiesce(): Promise<void> {
    let docker: Runtime;
    try {
      docker = await this.d.project.docker();
    } catch {
      return; // no engine: nothing of ours runs on it
    }
    for (const c of await docker.list(this.d.slug)) {
      if (!c.running) continue;
      if (c.taskId) await this.d.proxy.unpinTask(c.taskId);
      const left = await docker.halt(c.id);
      if (left) this.d.log.error(`at stop: ${left}`);
    }
    // A turn it cut is over, said as such (not "its container is gone" from the next daemon).
    for (const task of Tasks.list(this.d.db, { status: "running" })) {
      this.d.ledger.move(task, "failed", { error: `lazy daemon stop ended this turn; lazy start ${this.ref(task)} runs it again` });
      this.d.proxy.release(task.id, "turn");
    }
    const gateway = await docker.removeNetwork(this.d.slug, this.d.project.networkOptions(this.d.config()));
    if (gateway) this.d.log.info(`removed the project's network (gateway ${gateway})`);
  }
}
