import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { type Grant, Grants, type Identity } from "../../src/proxy/identity/grants";
import { offPin, pinOwner } from "../../src/proxy/identity/pin";
import * as Placeholders from "../../src/proxy/identity/placeholders";
import { LazyError } from "../../src/util/errors";
import * as Log from "../../src/util/log";
import { removeStateDir, stateDir } from "../helpers/fixtures";

Log.configure({ stderr: false });

let dir: string;
beforeEach(() => {
  dir = stateDir("lazy-grants-");
});
afterEach(() => removeStateDir(dir));

const agent = (over: Partial<Identity> = {}): Identity => ({
  role: "agent",
  taskId: "a1b2c3d4e5f6",
  taskRef: "fix-login",
  profile: "claude",
  envVar: "CLAUDE_CODE_OAUTH_TOKEN",
  shape: "anthropic-oauth",
  ...over,
});
const builder = (session: string): Identity => ({
  role: "builder",
  taskId: null,
  taskRef: null,
  session,
  profile: "claude",
  envVar: "ANTHROPIC_API_KEY",
  shape: "anthropic-api-key",
});

describe("minting", () => {
  test("the same identity gets the same placeholder back", () => {
    const g = Grants.open(dir);
    const a = g.mint(agent());
    const b = g.mint(agent());
    expect(b.token).toBe(a.token);
    expect(g.size).toBe(1);
    expect(Placeholders.isPlaceholder(a.token)).toBe(true);
    expect(a.token).toStartWith("sk-ant-oat01-lazy-");
  });

  test("a different profile, task, env var or role gets a different placeholder", () => {
    const g = Grants.open(dir);
    const base = g.mint(agent()).token;
    const others = [
      g.mint(agent({ profile: "claude-ollama", shape: "generic" })).token,
      g.mint(agent({ taskId: "ffff0000aaaa" })).token,
      g.mint(agent({ envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" })).token,
      g.mint(agent({ role: "lazy" })).token,
    ];
    expect(new Set([base, ...others]).size).toBe(5);
  });

  test("a lookup returns the grant with its attribution", () => {
    const g = Grants.open(dir, { now: () => new Date("2026-12-02T10:00:00Z") });
    const a = g.mint(agent());
    expect(g.lookup(a.token)).toEqual({
      token: a.token,
      role: "agent",
      taskId: "a1b2c3d4e5f6",
      taskRef: "fix-login",
      session: null,
      profile: "claude",
      envVar: "CLAUDE_CODE_OAUTH_TOKEN",
      shape: "anthropic-oauth",
      createdAt: "2026-12-02T10:00:00.000Z",
      pinnedIp: null,
    });
    expect(g.lookup("sk-ant-oat01-lazy-unknown")).toBeUndefined();
  });

  test("a task that gets a code keeps its token; its traffic is relabelled", () => {
    const g = Grants.open(dir);
    const a = g.mint(agent({ taskRef: "a1b2c3d" }));
    const b = g.mint(agent({ taskRef: "fix-login" }));
    expect(b.token).toBe(a.token);
    expect(g.lookup(a.token)?.taskRef).toBe("fix-login");
  });

  test("a different credential shape behind the same variable replaces the placeholder", () => {
    const g = Grants.open(dir);
    const id = {
      role: "host" as const,
      taskId: null,
      taskRef: null,
      profile: "router",
      envVar: "ANTHROPIC_AUTH_TOKEN",
    };
    const a = g.mint({ ...id, shape: "generic" });
    const b = g.mint({ ...id, shape: "openrouter" });
    expect(b.token).not.toBe(a.token);
    expect(b.token).toStartWith("sk-or-v1-lazy-");
    expect(g.lookup(a.token)).toBeUndefined();
    expect(g.size).toBe(1);
  });

  test("host launches share one grant per project per (profile, env var)", () => {
    const g = Grants.open(dir);
    const host = {
      role: "host" as const,
      taskId: null,
      taskRef: null,
      profile: "claude",
      envVar: "ANTHROPIC_API_KEY",
      shape: "anthropic-api-key" as const,
    };
    expect(g.mint(host).token).toBe(g.mint(host).token);
    expect(g.mint({ ...host, profile: "codex", envVar: "OPENAI_API_KEY", shape: "openai" }).token).not.toBe(g.mint(host).token);
  });

  test("malformed identities are refused with every problem listed", () => {
    const g = Grants.open(dir);
    const refused = (id: Identity) => {
      try {
        g.mint(id);
      } catch (e) {
        expect(e).toBeInstanceOf(LazyError);
        return (e as LazyError).details;
      }
      throw new Error("expected a refusal");
    };
    expect(refused(agent({ taskId: null }))).toEqual(["an agent grant needs a taskId"]);
    expect(refused({ ...builder(""), profile: "" })).toEqual(["profile is empty", "a builder grant needs a session name"]);
    expect(refused(agent({ session: "s1" }))).toEqual(["a grant for role agent takes no session name"]);
    expect(refused({ ...agent(), role: "host" })).toEqual(["a host grant is project-wide: taskId must be null"]);
    expect(g.size).toBe(0);
  });
});

describe("revocation", () => {
  test("revokeTask removes every grant of that task and nothing else", () => {
    const g = Grants.open(dir);
    const a = g.mint(agent());
    const b = g.mint(agent({ envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" }));
    const c = g.mint(agent({ role: "lazy" }));
    const other = g.mint(agent({ taskId: "other" }));
    expect(g.revokeTask("a1b2c3d4e5f6")).toBe(3);
    for (const t of [a, b, c]) expect(g.lookup(t.token)).toBeUndefined();
    expect(g.lookup(other.token)).toBeDefined();
    expect(g.revokeTask("a1b2c3d4e5f6")).toBe(0);
    // Starting the task again mints a new placeholder: the revoked one stays dead.
    expect(g.mint(agent()).token).not.toBe(a.token);
  });

  test("a daemon's own-call grants do not outlive it: the next daemon's registry has none, a task's grant stays", () => {
    const first = Grants.open(dir);
    const task = first.mint(agent());
    // A call about no task on a remote engine: nothing pins it, so it would redeem from anywhere.
    const call = first.mint({ ...agent({ role: "lazy", taskId: null, taskRef: null }) });
    expect(first.lookup(call.token)).toBeDefined();
    const next = Grants.open(dir); // the next daemon, after this one was killed mid-call
    expect(next.lookup(call.token)).toBeUndefined();
    expect(next.lookup(task.token)?.token).toBe(task.token);
    // The next call gets a fresh placeholder; the orphan's old one stays dead.
    expect(next.mint({ ...agent({ role: "lazy", taskId: null, taskRef: null }) }).token).not.toBe(call.token);
  });

  test("revokeBuilder removes that session's grants", () => {
    const g = Grants.open(dir);
    const s1 = g.mint(builder("s1"));
    const s2 = g.mint(builder("s2"));
    expect(g.revokeBuilder("s1")).toBe(1);
    expect(g.lookup(s1.token)).toBeUndefined();
    expect(g.lookup(s2.token)).toBeDefined();
  });

  test("revoke removes one placeholder", () => {
    const g = Grants.open(dir);
    const a = g.mint(agent());
    expect(g.revoke(a.token)).toBe(true);
    expect(g.revoke(a.token)).toBe(false);
    expect(Grants.open(dir).lookup(a.token)).toBeUndefined();
  });
});

describe("builder cap", () => {
  test("evicts oldest first once over the cap", () => {
    const g = Grants.open(dir, { builderCap: 3 });
    const agentGrant = g.mint(agent());
    const tokens = ["b1", "b2", "b3", "b4", "b5"].map((s) => g.mint(builder(s)).token);
    expect(tokens.map((t) => g.lookup(t) !== undefined)).toEqual([false, false, true, true, true]);
    expect(g.lookup(agentGrant.token)).toBeDefined(); // only builder grants count
  });

  test("re-minting an existing builder does not evict anything", () => {
    const g = Grants.open(dir, { builderCap: 2 });
    const b1 = g.mint(builder("b1")).token;
    const b2 = g.mint(builder("b2")).token;
    expect(g.mint(builder("b1")).token).toBe(b1);
    expect(g.lookup(b1)).toBeDefined();
    expect(g.lookup(b2)).toBeDefined();
  });

  test("never evicts the grant just minted, even with a cap of zero", () => {
    const g = Grants.open(dir, { builderCap: 0 });
    const b1 = g.mint(builder("b1")).token;
    expect(g.lookup(b1)).toBeDefined();
    const b2 = g.mint(builder("b2")).token;
    expect(g.lookup(b2)).toBeDefined();
    expect(g.lookup(b1)).toBeUndefined();
  });

  test("a cap lowered across a restart evicts on the next mint, keeping the one in hand", () => {
    const first = Grants.open(dir, { builderCap: 10 });
    const tokens = ["b1", "b2", "b3", "b4"].map((s) => first.mint(builder(s)).token);
    const g = Grants.open(dir, { builderCap: 2 });
    expect(g.mint(builder("b1")).token).toBe(tokens[0] as string); // existing identity: no new grant, no eviction
    const b5 = g.mint(builder("b5")).token;
    expect([...tokens, b5].map((t) => g.lookup(t) !== undefined)).toEqual([false, false, false, true, true]);
  });
});

describe("the file", () => {
  test("a new instance on the same folder still looks up (restart)", () => {
    const a = Grants.open(dir).mint(agent());
    const pinned = Grants.open(dir);
    expect(pinned.pin(a.token, "172.18.0.5")).toBe(true);
    const g = Grants.open(dir);
    expect(g.lookup(a.token)).toMatchObject({ role: "agent", taskId: "a1b2c3d4e5f6", pinnedIp: "172.18.0.5" });
    expect(g.mint(agent()).token).toBe(a.token);
    expect(g.pin("nope", "1.2.3.4")).toBe(false);
  });

  test("is 0600 in a 0700 folder, with no temp files left behind", () => {
    const g = Grants.open(dir);
    for (let i = 0; i < 10; i++) g.mint(agent({ taskId: `t${i}` }));
    g.revokeTask("t3");
    expect(statSync(join(dir, "proxy-tokens.json")).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual(["proxy-tokens.json"]);
    const file = JSON.parse(readFileSync(join(dir, "proxy-tokens.json"), "utf8"));
    expect(file.version).toBe(1);
    expect(file.grants).toHaveLength(9);
  });

  test("a loosened file is tightened on open", () => {
    const a = Grants.open(dir).mint(agent());
    chmodSync(join(dir, "proxy-tokens.json"), 0o644);
    expect(Grants.open(dir).lookup(a.token)).toBeDefined();
    expect(statSync(join(dir, "proxy-tokens.json")).mode & 0o777).toBe(0o600);
  });

  test("a corrupt registry is a loud, actionable error, not a silent reset", () => {
    Grants.open(dir).mint(agent());
    writeFileSync(join(dir, "proxy-tokens.json"), '{"version":1,"grants":[{"token":""}]}');
    expect(() => Grants.open(dir)).toThrow(/remove it to revoke every placeholder/);
    writeFileSync(join(dir, "proxy-tokens.json"), "{not json");
    expect(() => Grants.open(dir)).toThrow(LazyError);
  });

  test("lookups never touch the disk", () => {
    const g = Grants.open(dir);
    const a = g.mint(agent());
    rmSync(join(dir, "proxy-tokens.json"));
    for (let i = 0; i < 1000; i++) expect(g.lookup(a.token)?.token).toBe(a.token);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("pinning", () => {
  // A real listener; the client binds the source address it presents from (127.0.0.0/8 is all loopback).
  async function presentedFrom(grant: Grant, source: string): Promise<string> {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req, srv) => new Response(offPin(grant, req, srv) ?? "ok") });
    try {
      return await new Promise<string>((resolve, reject) => {
        const s = connect({ host: "127.0.0.1", port: server.port!, localAddress: source }, () =>
          s.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        );
        let got = "";
        s.on("data", (d) => (got += d.toString()));
        s.on("end", () => resolve(got.split("\r\n\r\n")[1] ?? ""));
        s.on("error", reject);
      });
    } finally {
      server.stop(true);
    }
  }

  test("a call sharing a task's grant is accepted from its container while it runs; the task's container stays accepted", async () => {
    const g = Grants.open(dir);
    const a = g.mint(agent());
    expect(await presentedFrom(g.lookup(a.token)!, "127.0.0.7")).toBe("ok"); // not pinned yet: from anywhere
    g.pin(a.token, "127.0.0.2");
    expect(g.pinCall(a.token, "127.0.0.3")).toBe(true);
    expect(await presentedFrom(g.lookup(a.token)!, "127.0.0.2")).toBe("ok");
    expect(await presentedFrom(g.lookup(a.token)!, "127.0.0.3")).toBe("ok");
    expect(await presentedFrom(g.lookup(a.token)!, "127.0.0.7")).toBe("127.0.0.7");
    expect(pinOwner(g.lookup(a.token)!)).toBe("task fix-login's container (127.0.0.2, 127.0.0.3)");
    expect(g.unpinCall(a.token, "127.0.0.3")).toBe(true);
    // Survives a restart, as the daemon's registry does; a call's address left by a daemon that
    // died (its container is removed at start) does not.
    g.pinCall(a.token, "127.0.0.9");
    const again = Grants.open(dir).lookup(a.token)!;
    expect(await presentedFrom(again, "127.0.0.9")).toBe("127.0.0.9");
    expect(await presentedFrom(again, "127.0.0.3")).toBe("127.0.0.3");
    expect(await presentedFrom(again, "127.0.0.2")).toBe("ok");
  });

  test("the project's call grant stays pinned once its calls are gone: from nowhere, not from anywhere", async () => {
    const g = Grants.open(dir);
    const a = g.mint({ ...agent({ role: "lazy", taskId: null, taskRef: null }) });
    g.pinCall(a.token, "127.0.0.4");
    g.pinCall(a.token, "127.0.0.5");
    expect(await presentedFrom(g.lookup(a.token)!, "127.0.0.5")).toBe("ok");
    g.unpinCall(a.token, "127.0.0.4");
    g.unpinCall(a.token, "127.0.0.5");
    expect(g.unpinCall(a.token, "127.0.0.5")).toBe(false);
    expect(await presentedFrom(g.lookup(a.token)!, "127.0.0.4")).toBe("127.0.0.4");
    expect(await presentedFrom(g.lookup(a.token)!, "127.0.0.1")).toBe("127.0.0.1");
    expect(pinOwner(g.lookup(a.token)!)).toBe("lazy's own calls (none running now)");
  });
});
