/**
 * Attacks on Ollama and OpenRouter profiles (issue 29), by real Claude Code in a real container
 * running providers-agent.mjs as a Bash tool call:
 *  - an agent on a local Ollama profile asks the model server's admin API (/api/pull,
 *    /api/delete, /api/create, … and encoded or slashed spellings of them) with its placeholder:
 *    403 each, and the server never sees one;
 *  - an agent on an OpenRouter profile presents an OpenRouter-shaped key of its own (to bill
 *    through lazy unattributed), and a placeholder that is not its own (a host session's, which
 *    is pinned to nothing): 401 each, from a non-loopback address, and the provider sees neither.
 * On the code before issue 29 the admin routes were already refused (surface.ts), so that part
 * guards against a regression; the placeholder of a host session was accepted from a container.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TEST_IMAGES } from "../helpers/env";
import { containerProject, copying, launched, settledAs } from "../helpers/fixtures";
import { cleanupAll, type Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const OPENROUTER_KEY = "sk-or-v1-" + "a1b2c3d4e5f60718".repeat(4);
const FORGED = "sk-or-v1-" + "9".repeat(64);
let local: Mock.MockProvider;
let openrouter: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  [local, openrouter] = await Promise.all([Mock.ollama(), Mock.ollama()]);
  openrouter.prefix = "/api";
  const toml =
    `[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nopenrouter = "${openrouter.url}"\n\n` +
    `[profiles.local]\nharness = "claude"\nendpoint = "${local.url}"\n\n` +
    `[profiles.router]\nharness = "claude"\nendpoint = "https://openrouter.ai/api"\n`;
  p = await containerProject(local, "sk-ant-api03-unused", { toml, readme: false, files: copying(import.meta.dir, "providers-agent.mjs") });
  await p.setCredential("openrouter", OPENROUTER_KEY);
}, 120_000);
afterAll(() => cleanupAll(local, openrouter));

const probe = (args = "") => ({ name: "Bash", input: { command: `node providers-agent.mjs ${args}`, description: "probe" } });
const result = (code: string) => JSON.parse(readFileSync(join(p.stateDir, "worktrees", code, "providers.json"), "utf8"));

describe("provider profiles, attacked from a container", () => {
  test("Ollama's admin API through the proxy: 403 for every spelling, and the model server never sees one", async () => {
    local.answer({ text: "done.", toolUse: probe() });
    await launched(p, "ollama-admin", "Probe the model server", "--profile", "local");
    await settledAs(p, "ollama-admin");
    const r = result("ollama-admin");
    expect(r.base && r.placeholder).toBe(true);
    expect(r.admin).toHaveLength(10);
    for (const a of r.admin) expect(a.status, `${a.method} ${a.path}: ${a.text}`).toBe(403);
    expect(r.admin[0].text).toContain("lazy's proxy refuses POST /api/pull");
    // The server saw the agent's model turns and nothing of its admin API.
    expect(local.received.filter((x) => x.path !== "/v1/messages").map((x) => `${x.method} ${x.path}`)).toEqual([]);
    expect(local.received.some((x) => x.body.includes("zq-admin-probe-zq") && !x.body.includes("tool_result"))).toBe(false);
  }, 600_000);

  test("OpenRouter: a key of the agent's own and a host session's placeholder from a container are refused; the provider sees neither", async () => {
    openrouter.reset();
    const host = await p.grant({ role: "host", profile: "router" });
    expect(host.placeholder).toMatch(/^sk-or-v1-lazy-/);
    openrouter.reply = { text: "done.", toolUse: probe(`${FORGED} ${host.placeholder}`) };
    await launched(p, "router-probe", "Probe OpenRouter", "--profile", "router");
    await settledAs(p, "router-probe");
    const r = result("router-probe");
    expect(r.forged.status).toBe(401);
    expect(r.forged.text).toContain("only a session on this machine may bring its own");
    expect(r.other.status).toBe(401);
    expect(r.other.text).toContain(
      "lazy's proxy refused this placeholder: it belongs to a host session on this machine, usable from this machine only",
    );
    // Only the real key reached OpenRouter, only on the agent's own turns.
    for (const x of openrouter.received) {
      expect(x.headers.authorization).toBe(`Bearer ${OPENROUTER_KEY}`);
      expect(x.body.includes("zq-provider-probe-zq") && !x.body.includes("tool_result")).toBe(false);
    }
    expect(openrouter.received.length).toBeGreaterThan(0);
  }, 600_000);
});
