/**
 * The real agent clients, end to end: `lazy chat` (the compiled binary) launches the pinned
 * Claude Code, Codex and Pi on the host, pointed at the proxy with a placeholder, and each
 * finishes a headless turn against a mock provider on loopback. Asserts what the upstream got
 * (the real credential, in the header the client's wire uses, never a placeholder) and what
 * the user saw (the mock's reply, never the real credential).
 *
 * The clients live in $LAZY_TEST_TOOLS/node_modules/.bin (default /opt/lazy-test-tools,
 * installed by scripts/setup-test-env.sh). A missing client fails its test; it is not skipped.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as Placeholders from "../../src/proxy/identity/placeholders";
import { BIN, cleanupAll, Project, type Result } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const TOOLS = process.env.LAZY_TEST_TOOLS ?? "/opt/lazy-test-tools";
const TOOLS_BIN = join(TOOLS, "node_modules", ".bin");

const API_KEY = "sk-ant-api03-REAL-" + "k".repeat(88) + "AA";
const OAUTH = "sk-ant-oat01-REAL-" + "o".repeat(88) + "AA";
const OPENAI_KEY = "sk-proj-REAL-" + "p".repeat(32) + "T3BlbkFJ" + "q".repeat(32);

/** How long one client turn may take before it is killed (with its children). */
const TURN_SECONDS = 90;
const TEST_TIMEOUT = 120_000;

let anthropic: Mock.MockProvider;
let openai: Mock.MockProvider;
let p: Project;
const homes: string[] = [];

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  openai = await Mock.openai();
  p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\nopenai = "${openai.url}"\n` });
  await p.ok(["daemon", "start"]);
  await p.setCredential("anthropic", API_KEY);
  await p.setCredential("openai", OPENAI_KEY);
});

afterEach(() => {
  // Whatever a test did, no mock may ever have seen a placeholder.
  assertNoPlaceholderReachedAMock();
});

afterAll(async () => {
  await cleanupAll();
  await anthropic?.close();
  await openai?.close();
  for (const h of homes.splice(0)) rmSync(h, { recursive: true, force: true });
});

function requireClient(name: string): void {
  if (!existsSync(join(TOOLS_BIN, name)))
    throw new Error(
      `${name} is not installed in ${TOOLS_BIN}: run bash scripts/setup-test-env.sh (it installs the pinned Claude Code, Codex and Pi there), or point LAZY_TEST_TOOLS at a folder that has node_modules/.bin/${name}.`,
    );
}

/** A fresh, empty HOME (and XDG folders) so nothing of the machine user's client config leaks in. */
function freshHome(): Record<string, string> {
  const home = realpathSync(mkdtempSync(join(tmpdir(), "lazy-client-home-")));
  homes.push(home);
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_STATE_HOME: join(home, ".local", "state"),
  };
}

/**
 * `lazy chat ARGS` with the clients on PATH and a fresh HOME, bounded: coreutils `timeout`
 * puts lazy and the client it spawns in one process group and kills the whole group (exit
 * 124) if the turn outlives TURN_SECONDS.
 */
async function chat(args: string[]): Promise<Result & { ms: number }> {
  const env: Record<string, string> = {};
  const extra = { PATH: `${TOOLS_BIN}:${process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin"}`, ...freshHome() };
  for (const [k, v] of Object.entries({ ...process.env, ...p.env, ...extra })) if (v !== undefined) env[k] = v;
  delete env.LAZY_PROJECT;
  const started = Date.now();
  const proc = Bun.spawn(["timeout", "-k", "5", String(TURN_SECONDS), BIN, "chat", ...args], {
    cwd: p.root,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const ms = Date.now() - started;
  console.log(`[clients] lazy chat ${args.slice(0, 2).join(" ")} … exited ${code} in ${ms} ms`);
  if (code === 124 || code === 137)
    throw new Error(`lazy chat ${args.join(" ")} did not finish in ${TURN_SECONDS} s\nstdout: ${stdout}\nstderr: ${stderr}`);
  return { code, stdout, stderr, ms };
}

function explain(r: Result, mock: Mock.MockProvider): string {
  const seen = mock.received.map((q) => `${q.method} ${q.path}${q.query}`).join(", ") || "nothing";
  return `exit ${r.code}\nstdout: ${r.stdout.slice(0, 4000)}\nstderr: ${r.stderr.slice(0, 4000)}\nmock received: ${seen}`;
}

/** Every byte of a recorded request a placeholder could hide in. */
const everything = (r: Mock.Received) => `${r.method} ${r.path}${r.query}\n${JSON.stringify(r.headers)}\n${r.body}`;

/**
 * Every placeholder shape (src/proxy/identity/placeholders.ts) carries a `lazy` marker right after its
 * prefix: `sk-ant-api03-lazy-`, `sk-ant-oat01-lazy-`, `sk-proj-lazy-`, `sk-or-v1-lazy-`,
 * `key_lazy_`, `lazy-<64 hex>`, and the Cursor session stand-in's JWT payload starts with
 * `{"lazy":"placeholder"` (base64url `eyJsYXp5IjoicGxhY2Vob2xkZXIi`). A bare "-lazy-" is not
 * enough: Claude Code's prompt names its project memory folder after the working directory
 * (`projects/-tmp-lazy-proj-…`), which is no credential.
 */
const PLACEHOLDER =
  /\bsk-(?:ant-(?:api|oat|ort)\d{2}|proj|or-v1)-lazy-|_lazy_|\blazy-[0-9a-f]{64}\b|eyJsYXp5IjoicGxhY2Vob2xkZXIi|\b(?:ghp|ghs|npm)_lazy[A-Za-z0-9]{32}\b|\bglpat-lazy|\bpypi-lazy|\blazy-svc-[0-9a-f]{64}\b/;

function assertNoPlaceholderReachedAMock(): void {
  for (const mock of [anthropic, openai]) {
    for (const r of mock.received) {
      const text = everything(r);
      const m = PLACEHOLDER.exec(text);
      if (m) {
        const at = m.index;
        throw new Error(
          `a placeholder reached the mock at ${mock.url}: ${r.method} ${r.path}${r.query} contains "${m[0]}" (…${text.slice(Math.max(0, at - 40), at + 60)}…)`,
        );
      }
    }
  }
}

/** The placeholder this project's host launches of `profile` get (the same identity mints the same one). */
async function hostPlaceholder(profile: string): Promise<string> {
  return (await p.grant({ role: "host", profile })).placeholder;
}

function assertClean(r: Result, secrets: string[], placeholder: string, mock: Mock.MockProvider): void {
  for (const s of secrets) {
    expect(r.stdout).not.toContain(s);
    expect(r.stderr).not.toContain(s);
  }
  for (const q of mock.received) expect(everything(q)).not.toContain(placeholder);
  assertNoPlaceholderReachedAMock();
}

test("the placeholder scan recognises every placeholder shape lazy mints, and not the project folder", () => {
  for (const shape of Placeholders.Shape.options) expect(PLACEHOLDER.test(Placeholders.mint(shape)), shape).toBe(true);
  expect(PLACEHOLDER.test(`Working directory: ${p.root}; memory in projects/${p.root.replaceAll("/", "-")}/memory/`)).toBe(false);
});

describe("Claude Code through lazy chat", () => {
  const turn = ["chat", "--profile", "claude", "--", "-p", "say hi", "--output-format", "json"];

  async function claudeTurn(): Promise<Result> {
    requireClient("claude");
    anthropic.reset();
    openai.reset();
    const r = await chat(turn.slice(1));
    expect(r.code, explain(r, anthropic)).toBe(0);
    const result = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
    expect(result.type).toBe("result");
    expect(result.is_error).toBe(false);
    expect(result.result).toContain(Mock.DEFAULT_REPLY_TEXT);
    return r;
  }

  test(
    "an Anthropic API key: the upstream gets it in x-api-key, Claude Code never sees it",
    async () => {
      await p.setCredential("anthropic", API_KEY);
      const r = await claudeTurn();
      const turns = anthropic.received.filter((q) => q.method === "POST" && q.path === "/v1/messages");
      expect(turns.length).toBeGreaterThanOrEqual(1);
      for (const q of turns) {
        expect(q.query).toBe("?beta=true");
        expect(q.headers["x-api-key"]).toBe(API_KEY);
        expect(q.headers.authorization).toBeUndefined();
      }
      // Every request that carried a credential carried the real one.
      for (const q of anthropic.received) {
        if (q.headers["x-api-key"] !== undefined) expect(q.headers["x-api-key"]).toBe(API_KEY);
        expect(q.headers.authorization).toBeUndefined();
      }
      expect(openai.received).toHaveLength(0);
      assertClean(r, [API_KEY], await hostPlaceholder("claude"), anthropic);
    },
    TEST_TIMEOUT,
  );

  test(
    "an OAuth token: the upstream gets Authorization: Bearer with the oauth beta, Claude Code never sees it",
    async () => {
      await p.setCredential("anthropic", OAUTH);
      try {
        const g = await p.grant({ role: "host", profile: "claude" });
        expect(g.envVar).toBe("CLAUDE_CODE_OAUTH_TOKEN");
        const r = await claudeTurn();
        const turns = anthropic.received.filter((q) => q.method === "POST" && q.path === "/v1/messages");
        expect(turns.length).toBeGreaterThanOrEqual(1);
        for (const q of turns) {
          expect(q.query).toBe("?beta=true");
          expect(q.headers.authorization).toBe(`Bearer ${OAUTH}`);
          expect(q.headers["x-api-key"]).toBeUndefined();
          expect(q.headers["anthropic-beta"]!.split(",").map((b) => b.trim())).toContain("oauth-2025-04-20");
        }
        for (const q of anthropic.received) {
          if (q.headers.authorization !== undefined) expect(q.headers.authorization).toBe(`Bearer ${OAUTH}`);
          expect(q.headers["x-api-key"]).toBeUndefined();
        }
        expect(openai.received).toHaveLength(0);
        assertClean(r, [OAUTH], g.placeholder, anthropic);
      } finally {
        await p.setCredential("anthropic", API_KEY);
      }
    },
    TEST_TIMEOUT,
  );
});

describe("Codex through lazy chat", () => {
  test(
    "codex exec finishes a turn; the upstream gets the real OpenAI key as Bearer",
    async () => {
      requireClient("codex");
      anthropic.reset();
      openai.reset();
      const r = await chat(["--profile", "codex", "--", "exec", "--json", "--skip-git-repo-check", "say hi"]);
      expect(r.code, explain(r, openai)).toBe(0);
      const events = r.stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l));
      expect(
        events.some((e) => e.type === "turn.completed"),
        explain(r, openai),
      ).toBe(true);
      const said = events.filter((e) => e.type === "item.completed" && e.item?.type === "agent_message").map((e) => e.item.text);
      expect(said.join("\n")).toContain(Mock.DEFAULT_REPLY_TEXT);
      const turns = openai.received.filter((q) => q.method === "POST" && q.path === "/v1/responses");
      expect(turns.length).toBeGreaterThanOrEqual(1);
      for (const q of openai.received) expect(q.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
      expect(anthropic.received).toHaveLength(0);
      assertClean(r, [OPENAI_KEY], await hostPlaceholder("codex"), openai);
    },
    TEST_TIMEOUT,
  );
});

describe("Pi through lazy chat", () => {
  test(
    "pi -p finishes a turn; the upstream gets the real Anthropic key in x-api-key",
    async () => {
      requireClient("pi");
      anthropic.reset();
      openai.reset();
      const r = await chat(["--profile", "pi", "--", "-p", "say hi"]);
      expect(r.code, explain(r, anthropic)).toBe(0);
      expect(r.stdout).toContain(Mock.DEFAULT_REPLY_TEXT);
      const turns = anthropic.received.filter((q) => q.method === "POST" && q.path === "/v1/messages");
      expect(turns.length).toBeGreaterThanOrEqual(1);
      for (const q of turns) {
        expect(q.headers["x-api-key"]).toBe(API_KEY);
        expect(q.headers.authorization).toBeUndefined();
      }
      expect(openai.received).toHaveLength(0);
      assertClean(r, [API_KEY], await hostPlaceholder("pi"), anthropic);
    },
    TEST_TIMEOUT,
  );
});
