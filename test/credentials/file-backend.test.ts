/**
 * The file store, for real: a temp home, real files and modes, real child processes racing on
 * the same file.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CredentialStore } from "../../src/credentials";
import { LazyError } from "../../src/util/errors";
import { fakeKey, filesContaining, fixture, run, tempHome, waitFor } from "./helpers";

const FILE_ENV = { LAZY_CREDENTIAL_BACKEND: "file" };
let home: string;
let cleanup: () => void;
const dir = () => join(home, "credentials");
const file = () => join(dir(), "credentials.json");

beforeEach(() => {
  ({ home, cleanup } = tempHome());
});
afterEach(() => cleanup());

const open = (env: Record<string, string | undefined> = FILE_ENV, pollMs?: number) => CredentialStore.open({ home, env, pollMs });
const mode = (p: string) => statSync(p).mode & 0o777;

describe("file store", () => {
  test("LAZY_CREDENTIAL_BACKEND=file is chosen and said so", async () => {
    const store = await open();
    expect(store.backend).toBe("file");
    expect(store.backendNote).toContain("LAZY_CREDENTIAL_BACKEND=file");
    expect(store.backendNote).toContain(file());
  });

  test("one file, 0600, in a 0700 folder", async () => {
    const store = await open();
    await store.set("anthropic", fakeKey("sk-ant-api03-"));
    expect(mode(dir())).toBe(0o700);
    expect(mode(file())).toBe(0o600);
    expect(readdirSync(dir()).sort()).toEqual([".lock", "credentials.json"]);
  });

  test("a folder or file loosened by hand is tightened back on open", async () => {
    const store = await open();
    await store.set("openai", fakeKey("sk-proj-"));
    chmodSync(dir(), 0o755);
    chmodSync(file(), 0o644);
    await open();
    expect(mode(dir())).toBe(0o700);
    expect(mode(file())).toBe(0o600);
  });

  test("a write replaces the file atomically: new inode, new content, no temp file left", async () => {
    const store = await open();
    const first = fakeKey("sk-ant-api03-");
    const second = fakeKey("sk-ant-api03-");
    await store.set("anthropic", first);
    const inode = statSync(file()).ino;
    await store.set("anthropic", second);
    expect(statSync(file()).ino).not.toBe(inode);
    const text = readFileSync(file(), "utf8");
    expect(text).toContain(second);
    expect(text).not.toContain(first);
    expect(readdirSync(dir()).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    expect(mode(file())).toBe(0o600);
  });

  test("a temp file a dead writer left behind is removed on open; a live writer's is kept", async () => {
    await open();
    const dead = Bun.spawn(["true"]);
    await dead.exited;
    const orphan = join(dir(), `.credentials.json.${dead.pid}.0a1b2c3d.tmp`);
    const live = join(dir(), `.credentials.json.${process.pid}.0a1b2c3d.tmp`);
    writeFileSync(orphan, '{"version":1,"credentials":{}}', { mode: 0o600 });
    writeFileSync(live, '{"version":1,"credentials":{}}', { mode: 0o600 });
    await open();
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });

  test("set, list, get, remove round trip", async () => {
    const store = await open();
    const value = fakeKey("sk-ant-oat01-");
    const info = await store.set("anthropic", value);
    expect(info).toEqual({ name: "anthropic", kind: "oauth-token", source: "file", setAt: expect.any(String), last4: value.slice(-4) });
    expect(Number.isNaN(Date.parse(info.setAt!))).toBe(false);
    expect(store.get("anthropic")).toEqual({ value, kind: "oauth-token", source: "file" });
    expect(store.list()).toEqual([info]);

    const reopened = await open();
    expect(reopened.get("anthropic")?.value).toBe(value);

    expect(await store.remove("anthropic")).toBe(true);
    expect(store.get("anthropic")).toBeUndefined();
    expect(store.list()).toEqual([]);
    expect(await store.remove("anthropic")).toBe(false);
    expect(readFileSync(file(), "utf8")).not.toContain(value);
  });

  test("each credential's kind comes from its value", async () => {
    const store = await open();
    await store.set("anthropic", fakeKey("sk-ant-api03-"));
    await store.set("claude-sub", fakeKey("sk-ant-oat01-"));
    await store.set("openrouter", fakeKey("sk-or-v1-"));
    await store.set("cursor", fakeKey("crsr_"));
    await store.set("other", fakeKey("ghp_"));
    const kinds = Object.fromEntries(store.list().map((c) => [c.name, c.kind]));
    expect(kinds).toEqual({
      anthropic: "api-key",
      "claude-sub": "oauth-token",
      cursor: "api-key",
      openrouter: "api-key",
      other: "unknown",
    });
  });

  test("list shows at most the last 4 characters, never the value", async () => {
    const store = await open();
    const value = fakeKey("sk-proj-");
    await store.set("openai", value);
    await store.set("short", "abc123");
    const listed = JSON.stringify(store.list());
    expect(listed).not.toContain(value.slice(0, -4));
    expect(listed).not.toContain("abc123");
    expect(store.list().map((c) => c.last4)).toEqual([value.slice(-4), ""]);
  });

  test("a standard name not stored falls back to the daemon's env; a stored value wins", async () => {
    const envValue = fakeKey("sk-ant-api03-");
    const store = await open({ ...FILE_ENV, ANTHROPIC_API_KEY: `${envValue}\n`, OPENAI_API_KEY: "", SOME_OTHER: "x" });
    expect(store.get("anthropic")).toEqual({ value: envValue, kind: "api-key", source: "env" });
    expect(store.get("openai")).toBeUndefined(); // an empty variable is no credential
    expect(store.list()).toEqual([
      { name: "anthropic", kind: "api-key", source: "env", envVar: "ANTHROPIC_API_KEY", setAt: null, last4: envValue.slice(-4) },
    ]);

    const stored = fakeKey("sk-ant-oat01-");
    await store.set("anthropic", stored);
    expect(store.get("anthropic")).toEqual({ value: stored, kind: "oauth-token", source: "file" });
    expect(store.list().map((c) => [c.name, c.source])).toEqual([["anthropic", "file"]]);

    await store.remove("anthropic");
    expect(store.get("anthropic")?.source).toBe("env");
    // Only standard names fall back, and the env value is never written anywhere.
    expect(store.get("some-other")).toBeUndefined();
    expect(filesContaining(home, [envValue])).toEqual([]);
  });

  test("refresh picks up a change another process made, within 5 s of polling", async () => {
    const store = await open(FILE_ENV);
    const before = fakeKey("sk-proj-");
    await store.set("openai", before);
    store.start();
    try {
      const after = fakeKey("sk-proj-");
      const r = await run([process.execPath, fixture("set-one.ts")], { input: JSON.stringify({ home, name: "openai", value: after }) });
      expect(r.code).toBe(0);
      // Seen within the bounded wait, or waitFor throws naming it.
      await waitFor(() => store.get("openai")?.value === after, 5_000, "the outside change");

      const gone = await run([process.execPath, fixture("set-one.ts")], { input: JSON.stringify({ home, name: "openai" }) });
      expect(gone.code).toBe(0);
      await waitFor(() => store.get("openai") === undefined, 5_000, "the outside removal");
    } finally {
      store.stop();
    }
  });

  test("refresh() re-reads on demand", async () => {
    const a = await open();
    const b = await open();
    const value = fakeKey("sk-ant-api03-");
    await b.set("anthropic", value);
    expect(a.get("anthropic")).toBeUndefined();
    await a.refresh();
    expect(a.get("anthropic")?.value).toBe(value);
  });

  test("two processes setting two names at the same moment lose neither", async () => {
    const written: Record<string, string> = {};
    for (let round = 0; round < 5; round++) {
      const at = Date.now() + 700; // both children are up by then, then write together
      const jobs = ["a", "b"].map((side) => {
        const name = `race-${round}-${side}`;
        const value = fakeKey("sk-");
        written[name] = value;
        return run([process.execPath, fixture("set-one.ts")], { input: JSON.stringify({ home, name, value, at }) });
      });
      for (const r of await Promise.all(jobs)) expect(r).toMatchObject({ code: 0 });
    }
    const store = await open();
    const got = Object.fromEntries(store.list().map((c) => [c.name, store.get(c.name)?.value]));
    expect(got).toEqual(written);
    expect(readdirSync(dir()).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  }, 60_000);

  test("bad input is refused without echoing anything secret", async () => {
    const store = await open();
    const key = fakeKey("sk-ant-api03-");
    const errorOf = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (e) {
        return e as LazyError;
      }
      throw new Error("expected a refusal");
    };
    // Arguments swapped: the key given as the name.
    const swapped = await errorOf(store.set(key, "anthropic"));
    expect(swapped).toBeInstanceOf(LazyError);
    expect(swapped.code).toBe("invalid_input");
    expect(swapped.message).not.toContain(key.slice(8, 20));
    const badName = await errorOf(store.set("Has Space", key));
    expect(badName.message).not.toContain(key.slice(8, 20));
    // A pasted newline inside, or a space, would split an HTTP header.
    for (const v of [`${key}\nX-Evil: 1`, `${key} extra`, ""]) {
      const bad = await errorOf(store.set("anthropic", v));
      expect(bad.code).toBe("invalid_input");
      expect(bad.message).toContain('"anthropic"');
      expect(bad.message).not.toContain(key.slice(8, 20));
    }
    expect(store.list()).toEqual([]);
  });

  test("a corrupt file is an error naming the file, not quoting it", async () => {
    const store = await open();
    await store.set("anthropic", fakeKey("sk-ant-api03-"));
    const secret = fakeKey("sk-ant-api03-");
    writeFileSync(file(), `{"version":1,"credentials":{"anthropic":{"value":"${secret}" oops`, { mode: 0o600 });
    const e = await open().then(
      () => undefined,
      (err: unknown) => err as LazyError,
    );
    expect(e).toBeInstanceOf(LazyError);
    expect(e!.message).toContain(file());
    expect(e!.message).not.toContain(secret.slice(8, 20));
    // A running store keeps its last good values when a poll finds the file broken.
    await expect(store.refresh()).rejects.toThrow(file());
    expect(store.get("anthropic")).toBeDefined();
  });

  test("forcing an unknown backend is an error", async () => {
    await expect(open({ LAZY_CREDENTIAL_BACKEND: "vault" })).rejects.toThrow(/LAZY_CREDENTIAL_BACKEND="vault" is not one of/);
    if (process.platform !== "darwin") {
      await expect(open({ LAZY_CREDENTIAL_BACKEND: "keychain" })).rejects.toThrow(/macOS Keychain is unavailable/);
    }
  });

  test("no temp files and no other files appear in the home", async () => {
    const store = await open();
    await store.set("anthropic", fakeKey("sk-ant-api03-"));
    await store.set("openai", fakeKey("sk-proj-"));
    await store.remove("openai");
    expect(readdirSync(home)).toEqual(["credentials"]);
    expect(existsSync(join(dir(), "index.json"))).toBe(false);
  });
});
