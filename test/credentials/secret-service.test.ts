/**
 * The Secret Service for real: a private D-Bus session with a throwaway gnome-keyring, no
 * mocks. Then the same code with no session bus, where "auto" must fall back to the file store.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fakeKey, filesContaining, fixture, KEYRING_UP, run, tempHome } from "./helpers";

const TOOLS = ["dbus-run-session", "dbus-send", "gnome-keyring-daemon", "secret-tool"];
const missing = TOOLS.filter((t) => !Bun.which(t));
const linux = process.platform === "linux";

let home: string;
let cleanup: () => void;
beforeEach(() => {
  ({ home, cleanup } = tempHome());
});
afterEach(() => cleanup());

/** The environment with every way to a session bus removed. */
function noBusEnv(): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const k of ["DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "LAZY_CREDENTIAL_BACKEND"]) delete env[k];
  return env;
}

if (linux && missing.length && !process.env.CI) {
  console.warn(
    `SKIPPING the Secret Service tests: ${missing.join(", ")} not installed (apt-get install dbus gnome-keyring libsecret-tools)`,
  );
}

describe.skipIf(!linux || (missing.length > 0 && !process.env.CI))("Secret Service (gnome-keyring in a private D-Bus session)", () => {
  test("the required tools are installed", () => {
    // In CI a missing tool is a failure, never a skip.
    expect(missing, `install ${missing.join(", ")} (Debian: dbus gnome-keyring libsecret-tools)`).toEqual([]);
  });

  test("auto picks it; store, list, rotate, outside change, remove; no value outside the keyring", async () => {
    const lazyHome = join(home, "lazy");
    const userHome = join(home, "user"); // the keyring's own files, kept apart from lazy's
    const runtime = join(home, "run");
    mkdirSync(userHome, { recursive: true });
    mkdirSync(runtime, { recursive: true, mode: 0o700 });
    const values = [fakeKey("sk-ant-api03-"), fakeKey("sk-ant-api03-"), fakeKey("sk-proj-"), fakeKey("sk-ant-oat01-")];

    const script = [...KEYRING_UP, `exec "${process.execPath}" "${fixture("secret-service-child.ts")}"`].join("\n");
    const env = {
      ...noBusEnv(),
      HOME: userHome,
      XDG_DATA_HOME: join(userHome, ".local/share"),
      XDG_RUNTIME_DIR: runtime,
    };
    const r = await run(["dbus-run-session", "--", "bash", "-c", script], {
      input: JSON.stringify({ home: lazyHome, values }),
      env,
      timeoutMs: 60_000,
    });
    if (r.code !== 0) throw new Error(`the Secret Service child failed (exit ${r.code}): ${r.stderr.slice(-2000)}`);
    const report = JSON.parse(r.stdout.trim().split("\n").at(-1)!);

    expect(report.backend).toBe("secret-service");
    expect(report.note).toContain("Secret Service");
    expect(report).toMatchObject({
      setInfoOk: true,
      getAfterSet: true,
      lookupAfterSet: true,
      getAfterRotate: true,
      lookupAfterRotate: true,
      outsideChangeSeen: true,
      otherSees: ["anthropic", "work-openai"],
      otherValuesMatch: true,
      removed: true,
      removedAgain: false,
      getAfterRemove: true,
      lookupAfterRemove: { code: 1, empty: true },
      otherAfterRemove: ["anthropic"],
      lockCode: 0,
      keptWhileLocked: true,
    });
    expect(report.lockedRefresh).toMatch(
      /could not read credential "anthropic" in the Secret Service \(the keyring is locked.*\); check that the keyring is running and unlocked/,
    );
    expect(report.cycles).toHaveLength(3);
    // seen: within the child's bounded wait (5 s) for each outside change.
    for (const c of report.cycles) expect(c).toMatchObject({ storeCode: 0, seen: true, lazyWins: true, lookupAgrees: true });
    expect(report.listed).toEqual([
      { name: "anthropic", source: "secret-service", kind: "api-key", hasSetAt: true, last4ok: true },
      { name: "work-openai", source: "secret-service", kind: "api-key", hasSetAt: true, last4ok: true },
    ]);

    // No value in lazy's files (no file store at all, and an index of names only), nor in
    // anything the child printed.
    const dir = join(lazyHome, "credentials");
    expect(existsSync(join(dir, "credentials.json"))).toBe(false);
    const index = JSON.parse(readFileSync(join(dir, "index.json"), "utf8"));
    expect(Object.keys(index.stores["secret-service/lazy"])).toEqual(["anthropic"]);
    expect(filesContaining(lazyHome, values)).toEqual([]);
    for (const v of values) {
      expect(r.stdout.includes(v) || r.stderr.includes(v)).toBe(false);
    }
  }, 90_000);
});

describe.skipIf(!linux)("no Secret Service", () => {
  test('"auto" falls back to the file store and says why; forcing it fails saying so', async () => {
    const r = await run([process.execPath, fixture("no-secret-service-child.ts")], { input: JSON.stringify({ home }), env: noBusEnv() });
    if (r.code !== 0) throw new Error(`child failed (exit ${r.code}): ${r.stderr.slice(-2000)}`);
    const report = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
    expect(report.backend).toBe("file");
    expect(report.note).toMatch(/^Secret Service unavailable \(.+\); using the file store at /);
    expect(report.note).toContain(join(home, "credentials", "credentials.json"));
    expect(report.forced).toMatch(/LAZY_CREDENTIAL_BACKEND=secret-service, but the Secret Service is unavailable/);
  }, 30_000);
});
