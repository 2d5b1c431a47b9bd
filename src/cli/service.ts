/**
 * `lazy daemon install` / `uninstall`: the project's daemon as a user service, so it starts at
 * login and comes back even if its keeper dies. A systemd user unit on Linux
 * (`$XDG_CONFIG_HOME/systemd/user/lazy-<slug>.service`), a launchd agent on macOS
 * (`~/Library/LaunchAgents/dev.lazy.<slug>.plist`). The service runs `lazy daemon run` (the
 * keeper, daemon/keeper.ts) in the project; systemd restarts it only if it is killed
 * (Restart=on-abnormal), so a keeper that gave up on a crash loop stays down and says why.
 *
 * The file holds no secret: the binary, the project, LAZY_HOME when set and PATH (the daemon
 * runs git and docker). Credentials stay in lazy's store. 0644, as service managers expect.
 * Where neither manager answers (no user session, a container, CI), it says so and changes
 * nothing. Paths with a line break or a control byte are refused: in a unit file they would
 * start lines of their own.
 */
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { LazyError } from "../util/errors";
import { writeFileAtomic } from "../util/files";

export interface Plan {
  manager: "systemd" | "launchd";
  /** The unit or plist file. */
  file: string;
  /** systemctl's unit name, or launchd's label. */
  name: string;
  text: string;
}

/** What install would write for this project (the same on any machine: no manager asked). */
export function plan(root: string, slug: string, exe: string[], env: NodeJS.ProcessEnv = process.env): Plan {
  for (const v of [root, ...exe, env.LAZY_HOME ?? "", env.PATH ?? ""])
    if ([...v].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f))
      throw new LazyError(
        "invalid_input",
        `A path for the service holds a line break or a control byte (${JSON.stringify(v)}); lazy will not write it into a service file.`,
      );
  const vars: [string, string][] = [
    ...(env.LAZY_HOME ? [["LAZY_HOME", env.LAZY_HOME] as [string, string]] : []),
    ["PATH", env.PATH ?? "/usr/local/bin:/usr/bin:/bin"],
  ];
  if (process.platform === "darwin") {
    const name = `dev.lazy.${slug}`;
    const x = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    const text = [
      `<?xml version="1.0" encoding="UTF-8"?>`,
      `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`,
      `<plist version="1.0"><dict>`,
      `  <key>Label</key><string>${x(name)}</string>`,
      `  <key>ProgramArguments</key><array>${[...exe, "daemon", "run"].map((a) => `<string>${x(a)}</string>`).join("")}</array>`,
      `  <key>WorkingDirectory</key><string>${x(root)}</string>`,
      `  <key>EnvironmentVariables</key><dict>${vars.map(([k, v]) => `<key>${k}</key><string>${x(v)}</string>`).join("")}</dict>`,
      `  <key>RunAtLoad</key><true/>`,
      `  <key>KeepAlive</key><dict><key>Crashed</key><true/></dict>`,
      `</dict></plist>`,
      ``,
    ].join("\n");
    return { manager: "launchd", file: join(homedir(), "Library", "LaunchAgents", `${name}.plist`), name, text };
  }
  const name = `lazy-${slug}.service`;
  // systemd: a double-quoted word takes \" and \\; % starts a specifier, %% is a percent sign.
  const q = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/%/g, "%%")}"`;
  const text = [
    `# Written by lazy daemon install; lazy daemon uninstall removes it.`,
    `[Unit]`,
    `Description=lazy daemon for ${root.replace(/%/g, "%%")}`,
    ``,
    `[Service]`,
    `Type=simple`,
    `WorkingDirectory=${q(root)}`,
    ...vars.map(([k, v]) => `Environment=${q(`${k}=${v}`)}`),
    `ExecStart=${[...exe, "daemon", "run"].map(q).join(" ")}`,
    // The keeper restarts a crashed daemon; systemd restarts the keeper only if it is killed.
    `Restart=on-abnormal`,
    `KillMode=mixed`,
    ``,
    `[Install]`,
    `WantedBy=default.target`,
    ``,
  ].join("\n");
  const config = process.env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return { manager: "systemd", file: join(config, "systemd", "user", name), name, text };
}

/** Run the service manager; its output when it fails. */
function manage(argv: string[]): { ok: boolean; output: string } {
  try {
    const r = Bun.spawnSync(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: 15_000 });
    return { ok: r.exitCode === 0, output: (r.stderr.toString() + r.stdout.toString()).trim().split("\n")[0] ?? "" };
  } catch (e) {
    return { ok: false, output: (e as Error).message };
  }
}

/** Whether this machine's service manager answers for this user; why not when it does not. */
export function available(p: Plan): { ok: true } | { ok: false; why: string } {
  if (p.manager === "launchd") {
    if (!Bun.which("launchctl")) return { ok: false, why: "launchctl is not on PATH" };
    return { ok: true };
  }
  if (!Bun.which("systemctl")) return { ok: false, why: "systemctl is not on PATH (no systemd here)" };
  const r = manage(["systemctl", "--user", "show-environment"]);
  return r.ok ? { ok: true } : { ok: false, why: `systemctl --user has no user session to talk to (${r.output || "it failed"})` };
}

function refuse(p: Plan, why: string, what: string): LazyError {
  return new LazyError(
    "conflict",
    `lazy daemon ${what} needs ${p.manager === "systemd" ? "a systemd user session" : "launchd"}, and ${why}; nothing was changed. The daemon still starts with any lazy command, and its keeper restarts it after a crash; under another supervisor, run lazy daemon run in the project folder.`,
  );
}

/** Refuse, saying why, where no service manager answers (before anything is changed). */
export function ready(p: Plan): void {
  const a = available(p);
  if (!a.ok) throw refuse(p, a.why, "install");
}

/** Write the unit and start it (the daemon now runs under the manager); ready() first. */
export function install(p: Plan): void {
  mkdirSync(dirname(p.file), { recursive: true, mode: 0o755 });
  writeFileAtomic(p.file, p.text, 0o644);
  const steps =
    p.manager === "systemd"
      ? [
          ["systemctl", "--user", "daemon-reload"],
          ["systemctl", "--user", "enable", "--now", p.name],
        ]
      : [["launchctl", "load", "-w", p.file]];
  for (const s of steps) {
    const r = manage(s);
    if (!r.ok)
      throw new LazyError(
        "daemon_failed",
        `${s.join(" ")} failed: ${r.output}. The unit is at ${p.file}; lazy daemon uninstall removes it.`,
      );
  }
}

/** Stop the service and remove its file; false when it was not installed. */
export function uninstall(p: Plan): boolean {
  if (!existsSync(p.file)) return false;
  const a = available(p);
  if (!a.ok) throw refuse(p, a.why, "uninstall");
  const steps = p.manager === "systemd" ? [["systemctl", "--user", "disable", "--now", p.name]] : [["launchctl", "unload", "-w", p.file]];
  for (const s of steps) {
    const r = manage(s);
    if (!r.ok) throw new LazyError("daemon_failed", `${s.join(" ")} failed: ${r.output}; ${p.file} is still there.`);
  }
  rmSync(p.file, { force: true });
  if (p.manager === "systemd") manage(["systemctl", "--user", "daemon-reload"]);
  return true;
}
