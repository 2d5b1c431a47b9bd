/** Shared by the credential tests: temp homes, child bun scripts, and a scan for leaked values. */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function tempHome(): { home: string; cleanup: () => void } {
  const home = mkdtempSync(join(tmpdir(), "lazy-cred-test-"));
  return { home, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

export const fixture = (name: string): string => join(import.meta.dir, "fixtures", name);

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run a command with `input` on stdin (test values travel there, never in argv), killed after
 * timeoutMs so a hung keyring fails the test instead of hanging it.
 */
export async function run(
  cmd: string[],
  opts: { input?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<Ran> {
  const child = Bun.spawn(cmd, {
    stdin: opts.input === undefined ? "ignore" : Buffer.from(opts.input),
    stdout: "pipe",
    stderr: "pipe",
    env: opts.env ?? process.env,
    timeout: opts.timeoutMs ?? 30_000,
  });
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  await child.exited;
  return { code: child.signalCode ? null : child.exitCode, stdout, stderr };
}

/** Every file under dir (recursively) whose bytes contain one of the values. */
export function filesContaining(dir: string, values: string[]): string[] {
  const hits: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d)) {
      const p = join(d, entry);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) {
        const text = readFileSync(p, "latin1");
        if (values.some((v) => text.includes(v))) hits.push(p);
      }
    }
  };
  walk(dir);
  return hits;
}

/** A fresh, realistic-looking value of the given prefix; random so no two runs share one. */
export function fakeKey(prefix: string): string {
  return `${prefix}${crypto.randomUUID().replaceAll("-", "")}${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
}

/** Wait (bounded) until check() is true; returns the ms it took, or throws after timeoutMs. */
export async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(50);
  }
  return Date.now() - start;
}

/**
 * The start of a `dbus-run-session -- bash -c` script with an unlocked gnome-keyring.
 * gnome-keyring-daemon --unlock reads the new login keyring's password on stdin, forks, and
 * registers org.freedesktop.secrets on the session bus; it exits with the bus. Wait until it
 * owns that name: a client that calls earlier makes D-Bus start a second, keyring-less daemon
 * by activation.
 */
export const KEYRING_UP = [
  "set -e",
  "echo -n lazy-test-keyring | gnome-keyring-daemon --unlock --components=secrets >/dev/null",
  "for i in $(seq 1 100); do",
  "  dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true' && break",
  "  sleep 0.05",
  "done",
];
