/**
 * Request plugins ([[proxy.plugins]]) end to end: the compiled daemon loads modules from the lazy
 * home's plugins folder in each proxy thread; a plugin notes (audited), refuses (403 with its
 * reason, audited), rewrites headers and body (the upstream gets the rewrite, the plugin never
 * saw the credential), and one that throws or runs past its time fails the request loudly with
 * its name. A rewrite is checked against the forwarding surface again.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-REALPLUG-" + "k".repeat(70) + "AA";
let anthropic: Mock.MockProvider;
let ollama: Mock.MockProvider;

beforeAll(async () => ([anthropic, ollama] = await Promise.all([Mock.anthropic(), Mock.ollama()])));
afterAll(() => cleanupAll(anthropic, ollama));

/** A project whose lazy home holds these plugins (name → source), named in lazy.toml in this order. */
async function withPlugins(plugins: Record<string, string>, extra = "", entries?: string): Promise<Project> {
  const names = Object.keys(plugins);
  const toml =
    `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n\n` +
    (entries ?? names.map((n) => `[[proxy.plugins]]\nname = "${n}"\npath = "${n}.ts"\ntimeout_ms = 300\n`).join("\n")) +
    extra;
  const p = new Project({ toml });
  const dir = join(p.home, "plugins");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const [n, src] of Object.entries(plugins)) {
    writeFileSync(join(dir, `${n}.ts`), src);
    chmodSync(join(dir, `${n}.ts`), 0o600);
  }
  await p.setCredential("anthropic", KEY);
  return p;
}

const post = (url: string, placeholder: string, path = "/v1/messages?beta=true") =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": placeholder },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });

/** A request through `p`'s proxy on `profile`'s host grant: its status and lazy's error message. */
/** A refused request: its status, its refusal's code (x-lazy-refusal) and its words. */
async function failed(p: Project, profile: string): Promise<{ status: number; code: string | null; message: string }> {
  const g = await p.grant({ role: "host", profile });
  const res = await post(g.proxyUrl, g.placeholder);
  return { status: res.status, code: res.headers.get("x-lazy-refusal"), message: (await res.json()).error.message };
}

/** `p`'s audit says `why`, and nothing reached `mock`: lazy writes a request's row when it is done with it. */
async function nothingReached(mock: Mock.MockProvider, p: Project, why: string): Promise<void> {
  await audited(p, why);
  expect(mock.received).toEqual([]);
}

/** Wait for `p`'s audit to say `text` (rows are written in batches, after the answer). */
const audited = (p: Project, text: string) =>
  until(async () => (await p.ok(["stats", "audit"])).stdout.includes(text), 10_000, `the audit to say "${text}"`);

const GUARD = `
export default (req) => {
  if (req.path.startsWith("/v1/messages/count_tokens")) return { refuse: "token counting is off in this project" };
  const saw = "x-api-key" in req.headers || "authorization" in req.headers || JSON.stringify(req).includes("-lazy-");
  const body = JSON.parse(req.body);
  const was = body.model;
  body.model = "rewritten-model";
  return { note: "model was " + was, headers: { ...req.headers, "x-plugin-saw-credential": String(saw) }, body: JSON.stringify(body) };
};
`;

describe("request plugins", () => {
  test("a plugin notes, rewrites headers and body before the credential goes in, and refuses a path with its reason; all audited", async () => {
    anthropic.reset();
    const p = await withPlugins({ guard: GUARD });
    const g = await p.grant({ role: "host", profile: "claude" });
    const ok = await post(g.proxyUrl, g.placeholder);
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    const [r] = await anthropic.waitFor(1);
    expect(r!.headers["x-api-key"]).toBe(KEY);
    expect(r!.headers["x-plugin-saw-credential"]).toBe("false");
    expect(JSON.parse(r!.body).model).toBe("rewritten-model");

    const refused = await post(g.proxyUrl, g.placeholder, "/v1/messages/count_tokens");
    expect(refused.status).toBe(403);
    expect(refused.headers.get("x-lazy-refusal")).toBe("plugin_refused");
    // The words the agent's harness shows: what was refused, by which plugin, and why.
    expect((await refused.json()).error.message).toBe(
      "lazy's proxy refused POST /v1/messages/count_tokens: plugin guard: token counting is off in this project",
    );
    await audited(p, "plugin guard refused: token counting is off in this project");
    expect(anthropic.received).toHaveLength(1);

    const audit = (await p.ok(["stats", "audit"])).stdout;
    expect(audit).toContain("guard: model was claude-sonnet-4-5");
    expect(audit).toContain("plugin guard refused: token counting is off in this project");
    expect((await p.run(["doctor"])).stdout).toContain("ok    plugins  request plugin guard is loaded");
  });

  test("a rewrite to /api/delete is refused by the forwarding surface and never reaches the server", async () => {
    ollama.reset();
    const p = await withPlugins(
      { "to-delete": `export default () => ({ path: "/api/delete" });\n` },
      `\n[profiles.local]\nharness = "claude"\nendpoint = "${ollama.url}"\n`,
    );
    expect(await failed(p, "local")).toEqual({ status: 403, code: "path_refused", message: expect.stringContaining("POST /api/delete") });
    await nothingReached(ollama, p, "refused after plugin rewrite");
  });

  test("a plugin that throws, or runs past its time, fails the request naming it; nothing goes upstream", async () => {
    anthropic.reset();
    const p = await withPlugins({
      thrower: `export default () => { throw new Error("boom from the plugin"); };\n`,
    });
    expect(await failed(p, "claude")).toEqual({
      status: 500,
      code: "plugin_failed",
      message: expect.stringMatching(/thrower.*boom from the plugin/),
    });

    const q = await withPlugins({ slow: `export default async () => { await Bun.sleep(3000); };\n` });
    expect(await failed(q, "claude")).toEqual({
      status: 500,
      code: "plugin_failed",
      message: expect.stringMatching(/slow.*took longer than its 300 ms/),
    });
    await nothingReached(anthropic, q, "request plugin slow");
  });

  test("a plugin file in the project, a missing one and one without a default export are not loaded; doctor says why and requests fail", async () => {
    anthropic.reset();
    const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n` });
    const marker = join(p.root, "ran");
    writeFileSync(
      join(p.root, "evil.ts"),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "x");\nexport default () => {};\n`,
    );
    mkdirSync(join(p.home, "plugins"), { mode: 0o700 });
    writeFileSync(join(p.home, "plugins", "nodefault.ts"), "export const x = 1;\n");
    p.writeToml(
      `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n\n` +
        `[[proxy.plugins]]\nname = "evil"\npath = "${join(p.root, "evil.ts")}"\n\n` +
        `[[proxy.plugins]]\nname = "gone"\npath = "gone.ts"\n\n` +
        `[[proxy.plugins]]\nname = "nodefault"\npath = "nodefault.ts"\n`,
    );
    await p.setCredential("anthropic", KEY);
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout).toContain(
      `request plugin evil is refused: ${join(p.root, "evil.ts")} is inside the project, which every task container mounts`,
    );
    expect(doctor.stdout).toContain(`request plugin gone is refused: ${join(p.home, "plugins", "gone.ts")} does not exist`);
    expect(doctor.stdout).toContain("request plugin nodefault is refused:");
    expect(doctor.stdout).toContain("nodefault.ts has no default export function");
    expect(await failed(p, "claude")).toEqual({
      status: 500,
      code: "plugin_failed",
      message: expect.stringMatching(/evil.*it is not loaded/),
    });
    await nothingReached(anthropic, p, "request plugin evil");
    expect(await Bun.file(marker).exists()).toBe(false);
  });
});
