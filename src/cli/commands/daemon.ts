import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { type DaemonStatus, Keeper, run as runDaemon, State } from "../../daemon";
import { LazyError } from "../../util/errors";
import { findProjectRoot } from "../../util/paths";
import { VERSION } from "../../version";
import * as Client from "../client";
import { command, duration, jsonArg, print, printJson, printJsonLine } from "../command";
import { say } from "../voice";

function render(s: DaemonStatus): string {
  const lines = [
    `Daemon:    running (pid ${s.pid}, up ${duration(s.uptimeMs)}, version ${s.version}${s.version === VERSION ? "" : `; this lazy is ${VERSION}: lazy daemon restart runs it`})`,
    `Project:   ${s.root}`,
    s.web.enabled ? `Dashboard: ${s.web.url} (lazy dashboard prints a signed-in link)` : `Web:       off`,
    `Proxy:     ${s.proxy.url ?? "-"} (${s.proxy.state}${s.proxy.error ? `: ${s.proxy.error}` : ""})`,
    s.config.state === "ok"
      ? `Config:    ok (${s.config.present ? "lazy.toml" : "defaults, no lazy.toml"}, loaded ${s.config.loadedAt})`
      : `Config:    ${s.config.untrusted ? "changed and not trusted" : "broken"} since ${s.config.brokenSince}; serving the last ${s.config.untrusted ? "trusted" : "good"} config from ${s.config.loadedAt}:\n${s.config.problems.map((p) => `  ${p}`).join("\n")}`,
    `State:     ${s.stateDir}`,
    ...(s.telemetry
      ? [
          `Telemetry: ${s.telemetry.url}: ${s.telemetry.sent} spans sent, ${s.telemetry.queued} queued${s.telemetry.dropped + s.telemetry.failed ? `, ${s.telemetry.dropped + s.telemetry.failed} dropped` : ""}${s.telemetry.cut ? `, ${s.telemetry.cut} cut (turns past their cap of spans)` : ""}${s.telemetry.failing ? `; the collector fails: ${s.telemetry.failing} (is it running? [telemetry] otlp in lazy.toml)` : ""}`,
        ]
      : []),
    ...(s.crashes
      ? [
          `Crashes:   ${s.crashes.count} in the last minute, each restarted by lazy; last exit: ${s.crashes.lastExit} at ${s.crashes.lastAt} (lazy daemon logs says why)`,
        ]
      : []),
  ];
  return lines.join("\n");
}

/** The running daemon's status: JSON, or the lines render makes. */
async function show(c: Client.Client, json?: boolean): Promise<void> {
  const s = await c.request<DaemonStatus>("GET", "/api/status");
  if (json) printJson({ running: true, ...s });
  else print(render(s));
}

const status = command({
  meta: { name: "daemon status", description: "Show the daemon: pid, uptime, version, dashboard, proxy and config" },
  args: jsonArg,
  async run({ args }) {
    const root = findProjectRoot();
    const c = await Client.running(root);
    if (!c) {
      // The keeper gave up on a crash loop: say why, from its record (keeper.ts).
      const why = Keeper.gaveUpLine(Keeper.readCrashes(State.paths(root)));
      if (args.json) printJson({ running: false, root, ...(why ? { stoppedBecause: why } : {}) });
      else
        print(
          `Daemon:    not running${why ? `: ${why}` : ""} (any command that needs it starts it, or: lazy daemon start)\nProject:   ${root}`,
        );
      return;
    }
    await show(c, args.json);
  },
});

const start = command({
  meta: { name: "daemon start", description: "Start the project's daemon (commands that need it start it anyway)" },
  args: jsonArg,
  async run({ args }) {
    await show(await Client.connect(findProjectRoot()), args.json);
  },
});

const stop = command({
  meta: { name: "daemon stop", description: "Stop the project's daemon" },
  args: jsonArg,
  async run({ args }) {
    const r = await Client.stop(findProjectRoot());
    if (args.json) printJson({ stopped: Boolean(r), pid: r?.pid ?? null });
    else say.success(r ? `Stopped the daemon (pid ${r.pid}).` : "The daemon was not running.");
  },
});

/** A daemon log line (util/log.ts writes `ISO LEVEL [tag] message`) as a record; other lines (a message's continuation) carry only their text. */
function record(line: string): { at: string | null; level: string | null; tag: string | null; message: string } {
  const m = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) (DEBUG|INFO|WARN|ERROR)\s+\[([^\]]*)\] ?(.*)$/.exec(line);
  return m ? { at: m[1]!, level: m[2]!.toLowerCase(), tag: m[3]!, message: m[4]! } : { at: null, level: null, tag: null, message: line };
}

const restart = command({
  meta: { name: "daemon restart", description: "Stop the daemon and start it again (refuses on a lazy.toml that does not load)" },
  args: jsonArg,
  async run({ args }) {
    const root = findProjectRoot();
    // Turns carry on across a restart: the new daemon picks them up.
    await Client.stop(root, { containers: false });
    const c = await Client.start(root);
    const s = await c.request<DaemonStatus>("GET", "/api/status");
    if (args.json) printJson({ running: true, ...s });
    else print(render(s));
  },
});

const logs = command({
  meta: { name: "daemon logs", description: "Print the daemon's log" },
  args: {
    follow: { type: "boolean", alias: "f", description: "Keep printing new lines as they come" },
    lines: { type: "string", alias: "n", description: "How many of the last lines to print (default 200)" },
    json: { type: "boolean", description: "One JSON object a line on stdout: at, level, tag, message" },
  },
  async run({ args }) {
    const p = State.paths(findProjectRoot());
    const n = Number(args.lines ?? 200);
    if (!Number.isInteger(n) || n < 0) throw new LazyError("invalid_input", `--lines takes a whole number, not "${args.lines}".`);
    // Whole lines only: a chunk read while the daemon writes may end mid-line (or mid-character).
    const decoder = new StringDecoder("utf8");
    let partial = "";
    const emit = (chunk: Buffer, last?: number) => {
      const lines = (partial + decoder.write(chunk)).split("\n");
      partial = lines.pop()!;
      for (const l of last === undefined ? lines : lines.slice(lines.length - Math.min(last, lines.length)))
        args.json ? printJsonLine(record(l)) : print(l);
    };
    if (!existsSync(p.log)) {
      if (args.json) say.info(`No daemon log yet (${p.log}).`);
      else print(`No daemon log yet (${p.log}).`);
      if (!args.follow) return;
    }
    const text = existsSync(p.log) ? readFileSync(p.log) : Buffer.alloc(0);
    emit(text, n);
    if (!args.follow) {
      if (partial && n > 0) emit(Buffer.from("\n"));
      return;
    }
    let offset = text.length;
    for (;;) {
      await Bun.sleep(200);
      if (!existsSync(p.log)) continue;
      const size = statSync(p.log).size;
      if (size < offset) offset = 0;
      if (size === offset) continue;
      const fd = openSync(p.log, "r");
      const buf = Buffer.alloc(size - offset);
      readSync(fd, buf, 0, buf.length, offset);
      closeSync(fd);
      offset = size;
      emit(buf);
    }
  },
});

const runCmd = command({
  meta: { name: "daemon run", description: "Run the daemon in the foreground (what lazy starts for you)", hidden: true },
  args: {},
  async run() {
    await runDaemon(findProjectRoot(), [...Client.selfCommand(), "daemon", "run"]);
    // Serve until a signal or a stop request ends the process.
    await new Promise(() => {});
  },
});

const install = command({
  meta: { name: "daemon install", description: "Run the project's daemon as a user service (systemd user unit; launchd on macOS)" },
  args: {
    print: { type: "boolean", description: "Print the service file it would write, and change nothing" },
    ...jsonArg,
  },
  async run({ args }) {
    const root = findProjectRoot();
    const Service = await import("../service");
    const plan = Service.plan(root, State.paths(root).slug, Client.selfCommand());
    if (args.print) {
      if (args.json) printJson({ ...plan, installed: false });
      else print(plan.text.trimEnd());
      return;
    }
    Service.ready(plan); // no service manager: says why, changes nothing
    // The service's keeper takes over from one a command started: turns carry on meanwhile.
    await Client.stop(root, { containers: false });
    Service.install(plan);
    const deadline = Date.now() + 20_000;
    let c = await Client.running(root);
    while (!c && Date.now() < deadline) {
      await Bun.sleep(100);
      c = await Client.running(root);
    }
    if (args.json) printJson({ ...plan, installed: true, running: Boolean(c), pid: c?.record.pid ?? null });
    else if (c)
      say.success(
        `Installed ${plan.name} (${plan.file}); the daemon runs under ${plan.manager} (pid ${c.record.pid}) and starts at login.`,
      );
    else
      say.warn(
        `Installed ${plan.name} (${plan.file}), but the daemon did not answer within 20 s: ${plan.manager === "systemd" ? `systemctl --user status ${plan.name}` : `launchctl list ${plan.name}`} says why.`,
      );
  },
});

const uninstall = command({
  meta: { name: "daemon uninstall", description: "Remove the user service lazy daemon install made (the daemon stops with it)" },
  args: jsonArg,
  async run({ args }) {
    const root = findProjectRoot();
    const Service = await import("../service");
    const plan = Service.plan(root, State.paths(root).slug, Client.selfCommand());
    const removed = Service.uninstall(plan);
    if (args.json) printJson({ removed, file: plan.file });
    else if (removed) say.success(`Removed ${plan.name} (${plan.file}); its daemon stopped with it (any lazy command starts one again).`);
    else say.info(`No lazy service is installed for this project (${plan.file} does not exist); nothing was changed.`);
  },
});

export const daemon = command({
  meta: { name: "daemon", description: "Manage the project's daemon: status, logs, start, stop, restart, install, uninstall" },
  subCommands: { status, logs, start, stop, restart, install, uninstall, run: runCmd },
});
