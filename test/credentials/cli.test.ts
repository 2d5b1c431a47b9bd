/**
 * `lazy auth` through the compiled binary and its daemon: the real Secret Service in a private
 * D-Bus session, then the same machine with no Secret Service, then the file store's modes.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { BIN, cleanupAll, Project } from "../helpers/lazy";
import { fakeKey, filesContaining, KEYRING_UP } from "./helpers";

afterAll(cleanupAll);

const TOOLS = ["dbus-run-session", "dbus-send", "gnome-keyring-daemon", "secret-tool"];
const missing = TOOLS.filter((t) => !Bun.which(t));

function noBus(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  for (const k of ["DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "LAZY_CREDENTIAL_BACKEND", "LAZY_PROJECT"])
    delete out[k];
  return out;
}

describe("lazy auth", () => {
  test("Secret Service for real: set, list, rotate, remove through lazy; then without it, the file store, and lazy says so", async () => {
    expect(missing, `install ${missing.join(", ")} (Debian: dbus gnome-keyring libsecret-tools)`).toEqual([]);
    const p = new Project();
    const user = join(p.home, "user");
    const runtime = join(p.home, "run");
    mkdirSync(user, { recursive: true });
    mkdirSync(runtime, { recursive: true, mode: 0o700 });
    const v1 = fakeKey("sk-ant-api03-");
    const v2 = fakeKey("sk-ant-oat01-");
    const script = [
      ...KEYRING_UP,
      'printf %s "$V1" | "$LAZY" auth set anthropic >/dev/null',
      'echo "--- list1"; "$LAZY" auth list --json',
      'printf %s "$V2" | "$LAZY" auth set anthropic >/dev/null',
      'echo "--- list2"; "$LAZY" auth list',
      'echo "--- lookup"; secret-tool lookup service lazy account anthropic | sha256sum',
      '"$LAZY" auth rm anthropic >/dev/null',
      'echo "--- list3"; "$LAZY" auth list --json',
      '"$LAZY" daemon stop >/dev/null',
    ].join("\n");
    const env = {
      ...noBus({ ...process.env, ...p.env }),
      HOME: user,
      XDG_DATA_HOME: join(user, ".local/share"),
      XDG_RUNTIME_DIR: runtime,
      LAZY: BIN,
      V1: v1,
      V2: v2,
    };
    const proc = Bun.spawn(["dbus-run-session", "--", "bash", "-c", script], {
      cwd: p.root,
      env,
      stdout: "pipe",
      stderr: "pipe",
      timeout: 90_000,
    });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    expect(await proc.exited, err).toBe(0);
    const part = (name: string) => out.split(`--- ${name}\n`)[1]!.split("\n--- ")[0]!;

    const list1 = JSON.parse(part("list1"));
    expect(list1.backend).toBe("secret-service");
    expect(list1.credentials).toEqual([
      expect.objectContaining({ name: "anthropic", kind: "api-key", source: "secret-service", last4: v1.slice(-4) }),
    ]);
    expect(part("list2")).toContain("Backend: secret-service");
    expect(part("list2")).toMatch(/anthropic\s+oauth-token\s+secret-service/);
    const sha = new Bun.CryptoHasher("sha256").update(v2).digest("hex");
    expect(part("lookup")).toStartWith(sha); // rotated: the keyring holds the new value
    expect(JSON.parse(part("list3")).credentials).toEqual([]);
    for (const v of [v1, v2]) {
      expect(out.includes(v) || err.includes(v)).toBe(false);
      expect(p.log().includes(v)).toBe(false);
    }
    expect(filesContaining(p.home, [v1, v2]).filter((f) => !f.startsWith(user))).toEqual([]);

    // The same machine without a Secret Service: the file store, and lazy says so.
    const plain = noBus({ ...process.env, ...p.env });
    const r = Bun.spawnSync([BIN, "auth", "list"], { cwd: p.root, env: plain });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString()).toMatch(/Backend: file — Secret Service unavailable \(.+\); using the file store at /);
  }, 120_000);

  test("file store: 0700 folder, 0600 file; a secret on the command line is refused; concurrent sets lose nothing", async () => {
    const p = new Project();
    const values = Array.from({ length: 6 }, () => fakeKey("sk-proj-"));
    const r = await Promise.all(values.map((v, i) => p.run(["auth", "set", `key-${i}`], { stdin: v })));
    for (const x of r) expect(x.code).toBe(0);
    const list = await p.json(["auth", "list"]);
    expect(list.credentials.map((c: any) => c.name).sort()).toEqual(values.map((_, i) => `key-${i}`));
    const dir = join(p.home, "credentials");
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "credentials.json")).mode & 0o777).toBe(0o600);
    const argv = await p.run(["auth", "set", "openai", values[0]!]);
    expect(argv.code).not.toBe(0);
    expect(argv.stderr).toContain("no secret on the command line");
    expect(argv.stderr).not.toContain(values[0]!);
    const empty = await p.run(["auth", "set", "openai"], { stdin: "" });
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toContain("nothing was stored");
    // The daemon's environment is the fallback for a standard name, and lazy says so.
    const q = new Project({ env: { OLLAMA_API_KEY: "ollama-key-from-env-123456" } });
    const fromEnv = await q.json(["auth", "list"]);
    expect(fromEnv.credentials).toEqual([expect.objectContaining({ name: "ollama", source: "env", envVar: "OLLAMA_API_KEY" })]);
    expect((await q.ok(["auth", "list"])).stdout).toContain("env OLLAMA_API_KEY");
  }, 60_000);
});
