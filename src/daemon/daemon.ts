/**
 * The composition root: takes the single-instance lock, loads lazy.toml (refusing to start on
 * a broken one), opens the task store, starts the proxy and the API, and passes each what it
 * needs.
 */
import type { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import type { Broker } from "../broker";
import { Bus } from "../bus";
import { type Config, FILE, Trust } from "../config";
import { CredentialStore, ExpiryWarnings } from "../credentials";
import * as Disk from "../disk";
import { Egress } from "../egress";
import * as Git from "../git";
import * as Mcp from "../mcp";
import { Notifier } from "../notify";
import { ModelProxy, Targets } from "../proxy";
import { Runner } from "../runner";
import * as Store from "../store";
import { Telemetry } from "../telemetry";
import { LazyError, speak } from "../util/errors";
import { ensurePrivateDir, writeFileAtomic } from "../util/files";
import { type Lock, tryLock } from "../util/flock";
import { listen } from "../util/listen";
import * as Log from "../util/log";
import { lazyHome } from "../util/paths";
import { urlHost } from "../util/url";
import { VERSION } from "../version";
import { api, longLived } from "./api";
import { lookupWith, makeBroker, resolveMap } from "./broker";
import * as BuilderSessions from "./builder-sessions";
import { ConfigWatch } from "./config-watch";
import { onLeak } from "./egress-leak";
import * as Keeper from "./keeper";
import * as Ports from "./ports";
import type { Busy, DaemonStatus } from "./routes";
import * as State from "./state";
import * as Words from "./words";

export class Daemon {
  readonly version = VERSION;
  readonly startedAt = new Date();
  private apiServer: Server<undefined> | undefined;
  private stopping = false;
  /** API writes being answered (a launch building its image, lazy ask): a restart would cut them. */
  private writesInFlight = 0;
  /** Ends builder sessions whose lazy build was killed (builder-sessions.ts). */
  sweeper: Timer | undefined;
  /** The egress proxy task containers reach the allowed hosts through (src/egress). */
  egress: Egress | undefined;
  /** The broker: brokered services' tokens swapped in at the egress proxy (src/broker). */
  broker: Broker | undefined;
  /** OpenTelemetry export of each turn ([telemetry] otlp; src/telemetry). */
  telemetry: Telemetry | undefined;
  expiry: ExpiryWarnings | undefined;
  /** lazy's disk reserve: freed when the disk runs low, so the store, audit and log still write (disk/reserve.ts). */
  reserve: Disk.Reserve | undefined;

  private constructor(
    private readonly root: string,
    private readonly paths: State.StatePaths,
    private readonly db: Database,
    private readonly configWatch: ConfigWatch,
    private readonly proxy: ModelProxy,
    private readonly credentials: CredentialStore,
    private readonly runner: Runner,
    private readonly bus: Bus,
    private readonly notifier: Notifier,
    private readonly mcp: Mcp.McpTokens,
    private lock: Lock,
    private log: Log.Logger,
    private configPresent: boolean,
  ) {}

  get webEnabled(): boolean {
    return this.configWatch.state.config.server.web;
  }

  /**
   * Start the daemon for a project in this process. Returns undefined when another daemon
   * already holds the project's lock (the caller exits quietly: that one serves).
   */
  static async start(root: string): Promise<Daemon | undefined> {
    const paths = State.paths(root);
    ensurePrivateDir(paths.dir);
    const lock = tryLock(paths.lock);
    if (!lock) return undefined;
    const log = Log.create("daemon");
    // First: room for the store, the audit and the log when the disk fills (disk/reserve.ts).
    const reserve = new Disk.Reserve({ dir: paths.dir, log: Log.create("disk") });
    reserve.start();
    try {
      rmSync(paths.startupError, { force: true });
      // Broken or untrusted: no daemon, so nothing of it routes a credential (config/trust.ts).
      const loaded = Trust.check(root);
      if (!loaded.ok) throw loaded.error;
      const config = loaded.config;
      // The credential map must mean what it says: a collision refuses the start, naming both.
      Targets.build(config);
      const token = State.ensureToken(paths);
      const db = Store.open(paths.store);
      const credentials = await CredentialStore.open({ home: lazyHome() });
      credentials.start();
      let daemon: Daemon | undefined;
      const watch = new ConfigWatch(
        root,
        config,
        Log.create("config"),
        (c) => {
          if (!daemon) return;
          if (!daemon.configWatch.state.broken) daemon.proxy.reconfigure(c);
          daemon.bus.publish({ kind: "config" });
        },
        (c) => {
          try {
            Targets.build(c);
            return [];
          } catch (e) {
            return [(e as Error).message];
          }
        },
      );
      const proxy = new ModelProxy(paths.dir, db, credentials, () => watch.state.config);
      proxy.usePlugins({ home: lazyHome(), root });
      const bus = new Bus();
      // MCP tokens are the grant registry's (proxy/identity): revoked and pinned with the placeholders.
      const mcp = proxy.grants.mcp;
      let runner: Runner | undefined;
      const broker = makeBroker({
        root,
        stateDir: paths.dir,
        db,
        bus,
        proxy,
        credentials,
        config: () => watch.state.config,
        log: Log.create("broker"),
      });
      const egress = new Egress({
        broker: (src, host, port) => broker.route(src, host, port),
        lookup: lookupWith(resolveMap()),
        config: () => watch.state.config,
        grants: proxy.grants,
        audit: proxy.audit,
        log: Log.create("egress"),
        onLeak: onLeak({ db, bus, proxy, runner: () => runner, log: Log.create("egress") }),
        portsFile: paths.egressPorts,
      });
      runner = new Runner({
        root,
        slug: paths.slug,
        stateDir: paths.dir,
        db,
        proxy,
        mcp,
        config: () => watch.state.config,
        bus,
        log: Log.create("runner"),
        egress,
        broker,
        mcpHeard: (id) => ({ last: Mcp.lastHeard(id), since: Mcp.HEARD_SINCE }),
        diskLow: () => reserve.low(),
        untrusted: () => {
          const b = watch.state.broken;
          return b?.untrusted
            ? (b.refusal ??
                new LazyError(
                  "config_untrusted",
                  b.problems[0] ?? "lazy.toml changed and is not trusted: run lazy trust.",
                  b.problems.slice(1),
                ))
            : undefined;
        },
      });
      const notifier = new Notifier({
        db,
        bus,
        config: () => watch.state.config,
        credential: (name) => credentials.get(name)?.value,
        log: Log.create("notify"),
      });
      notifier.start();
      // OAuth tokens about to lapse: said ahead of the provider's 401 (credentials/expiry-warnings.ts).
      const expiry = new ExpiryWarnings({ credentials, notify: (e, m) => notifier.notice(e, m), log: Log.create("credentials") });
      expiry.start();
      daemon = new Daemon(root, paths, db, watch, proxy, credentials, runner, bus, notifier, mcp, lock, log, loaded.present);
      daemon.egress = egress;
      daemon.broker = broker;
      daemon.reserve = reserve;
      daemon.expiry = expiry;
      // Spans of each ended turn, made on this thread from the store and the audit (off the proxy's path).
      const telemetry = new Telemetry({
        db,
        bus,
        audit: proxy.audit,
        secrets: () => ({
          version: proxy.grants.version(),
          tokens: [...proxy.grants.all().map((g) => g.token), ...proxy.grants.allMcp().map((t) => t.token)],
        }),
        config: () => watch.state.config,
        log: Log.create("telemetry"),
        version: VERSION,
      });
      telemetry.start();
      daemon.telemetry = telemetry;
      // lazy's MCP tools, on the proxy's listeners (where task containers reach it).
      const mcpDeps: Mcp.McpDeps = {
        db,
        tokens: mcp,
        config: () => watch.state.config,
        event: (t, kind, data) => runner.ledger.event(t, kind, data),
        branchOf: (t) => `${Git.BRANCH_PREFIX}${t.code ?? t.id}`,
        compact: () => void runner.memory.maybe("agent"),
        // A task's token answers only while its turn (or a call about it) runs.
        live: (taskId) => proxy.isLive(taskId),
        add: (input) => runner.add(input),
        start: (ref, message) => runner.start(ref, message),
        warn: (message) => log.warn(message),
      };
      proxy.serveMcp({
        admit: (token, from) => {
          const a = Mcp.admit(mcpDeps, token, from);
          return a.ok ? { ok: true, who: a.who } : a;
        },
        serve: (req, from) => Mcp.serve(mcpDeps, req, from),
      });
      log.info(`credentials: ${credentials.backend} (${credentials.backendNote})`);
      // A daemon that comes back after a crash listens where the one before did (its record is
      // still there): agents and the dashboard were given those ports (ports.ts).
      // After a clean stop, the ports the project last used (ports.ts): open dashboard tabs work again.
      const before = Ports.before(paths);
      const last = Ports.last(paths);
      await Keeper.handover();
      await proxy.start(Ports.prefer(before?.proxy ?? last.proxy, config.proxy.bind, config.proxy.port));
      daemon.listenApi(config, token, Ports.prefer(before?.api ?? last.api, config.server.bind, config.server.port));
      // Where running containers reach the proxy, before the record says the daemon is ready.
      if (before) {
        await proxy.relisten();
        egress.relisten();
      }
      watch.start();
      const proxyAddr = proxy.address;
      State.writeRecord(paths, {
        pid: process.pid,
        version: VERSION,
        root,
        startedAt: daemon.startedAt.toISOString(),
        api: { host: config.server.bind, port: daemon.apiServer!.port! },
        web: config.server.web,
        proxy: proxyAddr,
        docker: { host: runner.engineEndpoint().host, source: runner.engineEndpoint().source },
      });
      try {
        Ports.remember(paths, { api: { host: config.server.bind, port: daemon.apiServer!.port! }, proxy: proxyAddr });
      } catch (e) {
        log.warn(`could not remember the ports for the next start (${paths.ports}): ${(e as Error).message}`);
      }
      log.info(`daemon ${VERSION} ready for ${root} (pid ${process.pid}, api ${daemon.apiUrl})`);
      // Reconcile after ready: Docker's client loads slowly, and reads need not wait for it.
      setTimeout(() => runner.startHousekeeping(), 100);
      // Builder sessions whose lazy build was killed end here (builder-sessions.ts).
      const sweep = () => void BuilderSessions.sweep({ proxy, mcp, log: Log.create("build") });
      setTimeout(sweep, 100);
      daemon.sweeper = setInterval(sweep, BuilderSessions.SWEEP_MS);
      daemon.sweeper.unref();
      return daemon;
    } catch (e) {
      reserve.stop();
      const err = e instanceof LazyError ? e : new LazyError("daemon_failed", `The daemon failed to start: ${(e as Error).message}.`);
      log.error(`${err.message}${err.details.length ? `\n  ${err.details.join("\n  ")}` : ""}`);
      writeFileAtomic(paths.startupError, JSON.stringify(err.toJSON()));
      lock.release();
      throw err;
    }
  }

  private listenApi(config: Config, token: string, port: number): void {
    const app = api(
      {
        version: this.version,
        root: this.root,
        db: this.db,
        bus: this.bus,
        config: () => this.configWatch.state.config,
        runner: this.runner,
        credentials: this.credentials,
        expiry: this.expiry,
        broker: this.broker,
        proxy: this.proxy,
        mcp: this.mcp,
        log: Log.create("api"),
        apiUrl: () => this.apiUrl,
        webEnabled: () => this.webEnabled,
        status: () => this.status(),
        freshConfig: () => this.configWatch.reload(),
        busy: () => this.busy(),
        stop: (reason, containers) => this.stop(reason, containers),
        diskFull: (e) => {
          if (!Disk.isFull(e)) return undefined;
          const freed = this.reserve?.releaseNow((e as Error).message) ?? false;
          return new LazyError(
            "disk_full",
            `The disk holding lazy's state (${this.paths.dir}) is full, so this was not done${freed ? "; lazy freed its reserve, so lazy's own records still write" : ""}. Free space on that disk, then try again.`,
          );
        },
      },
      token,
    );
    // The proxy's listeners (which task containers reach) answer 404 for any of these, token or not.
    this.proxy.notServed([
      ...new Set(
        app.routes
          .map((r) => r.path)
          .filter((p) => p.startsWith("/api/"))
          .map((p) => p.split("/").slice(0, 3).join("/")),
      ),
    ]);
    const pid = String(process.pid);
    this.apiServer = listen(config.server.bind, port, {
      idleTimeout: 30,
      fetch: (req, server) => {
        if (longLived(req.url)) server.timeout(req, 0);
        const write = req.method !== "GET" && req.method !== "HEAD";
        if (write) this.writesInFlight++;
        return app
          .handle(req)
          .then((res) => {
            res.headers.set("x-lazy-pid", pid);
            // The API re-checked lazy.toml before answering (api.ts): a broken or untrusted one
            // is named on every answer, so every CLI command can say so (cli/client.ts).
            const broken = this.configWatch.state.broken;
            if (broken) res.headers.set("x-lazy-config", broken.untrusted ? "untrusted" : "broken");
            return res;
          })
          .finally(() => {
            if (write) this.writesInFlight--;
          });
      },
    });
  }

  get apiUrl(): string {
    return `http://${urlHost(this.apiServer?.hostname ?? "127.0.0.1")}:${this.apiServer?.port}`;
  }

  /** What a restart would cut. The asking request is a read (GET /api/health): every write counted is another's. */
  busy(): Busy {
    return { turns: Store.Tasks.counts(this.db).running, requests: this.writesInFlight };
  }

  status(): DaemonStatus {
    const c = this.configWatch.state;
    const proxyAddr = this.proxy.address;
    return {
      pid: process.pid,
      version: this.version,
      root: this.root,
      slug: this.paths.slug,
      stateDir: this.paths.dir,
      startedAt: this.startedAt.toISOString(),
      uptimeMs: Date.now() - this.startedAt.getTime(),
      web: { enabled: this.webEnabled, url: this.webEnabled ? `${this.apiUrl}/` : null },
      api: { url: this.apiUrl },
      metadata: this.runner.metadataGuard() ?? null,
      busy: this.busy(),
      ...crashesOf(this.paths),
      ...(this.telemetry?.stats() ? { telemetry: this.telemetry.stats()! } : {}),
      fence: this.runner.fenceState() ?? null,
      docker: this.runner.engineEndpoint(),
      proxy: {
        state: this.proxy.state,
        url: proxyAddr ? `http://${urlHost(proxyAddr.host)}:${proxyAddr.port}` : null,
        ...(this.proxy.error ? { error: this.proxy.error } : {}),
      },
      config: c.broken
        ? {
            state: "broken",
            file: join(this.root, FILE),
            loadedAt: c.loadedAt,
            present: this.configPresent,
            problems: c.broken.problems,
            brokenSince: c.broken.since,
            ...(c.broken.untrusted ? { untrusted: true } : {}),
          }
        : { state: "ok", file: join(this.root, FILE), loadedAt: c.loadedAt, present: this.configPresent, problems: [] },
    };
  }

  /** `containers`: leave nothing of the project running (lazy daemon stop); a signal or a restart leaves turns running. */
  async stop(reason: string, containers = false): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.log.info(`stopping: ${reason}`);
    this.configWatch.stop();
    this.runner.shutdown();
    clearInterval(this.sweeper);
    // The warm call container holds an idle harness: gone with the daemon (bounded; housekeeping
    // removes what a daemon that could not wait left behind).
    await Promise.race([
      this.runner.calls.close().catch((e: unknown) => this.log.warn(`the warm call container: ${(e as Error).message}`)),
      Bun.sleep(5000),
    ]);
    // After the call container: the network goes only once nothing runs on it.
    if (containers)
      await Promise.race([
        this.runner.quiesce().catch((e: unknown) => this.log.warn(`stopping the project's containers: ${(e as Error).message}`)),
        Bun.sleep(20_000),
      ]);
    this.notifier.stop();
    this.expiry?.stop();
    this.reserve?.stop();
    this.apiServer?.stop(true);
    this.egress?.stop();
    this.broker?.stop();
    await this.telemetry?.stop();
    await this.proxy.stop();
    this.credentials.stop();
    State.clearRecord(this.paths, process.pid);
    this.db.close();
    this.lock.release();
    process.exit(0);
  }
}

/** Serve until told to stop. */
export async function serve(root: string): Promise<void> {
  // The daemon speaks in the API's voice: a refusal made as data reads so in its log and tasks.
  speak(Words.api);
  const paths = State.paths(root);
  ensurePrivateDir(paths.dir);
  // A line that finds no room frees lazy's disk reserve and is written into it (disk/reserve.ts).
  Log.configure({ file: paths.log, stderr: !process.env.LAZY_DAEMON_DETACHED, onFull: () => Disk.release(paths.dir) });
  const daemon = await Daemon.start(root);
  if (!daemon) {
    Log.create("daemon").debug("another daemon holds the lock; exiting");
    process.exit(0);
  }
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(sig, () => void daemon.stop(sig));
}

/** The keeper's crash record, for status: crashes in the last minute, and how the last one ended. */
function crashesOf(p: State.StatePaths): Pick<DaemonStatus, "crashes"> {
  const c = Keeper.readCrashes(p);
  const recent = (c?.recent ?? []).filter((x) => Date.now() - Date.parse(x.at) < Keeper.WINDOW_MS);
  const last = recent.at(-1);
  return last ? { crashes: { count: recent.length, lastExit: last.exit, lastAt: last.at } } : {};
}
