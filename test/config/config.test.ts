import { describe, expect, test } from "bun:test";
import { formatProblem, loadText, resolveLimits, starter } from "../../src/config";

/** The lines lazy prints for a lazy.toml it refuses; the test fails if the file loads. */
function problems(src: string): string[] {
  const r = loadText(src);
  expect(r.ok).toBe(false);
  return r.ok ? [] : r.problems.map(formatProblem);
}

describe("lazy.toml", () => {
  test("every problem is one line with its exact line and column, all at once", () => {
    const src = [
      "[server]",
      'port = "high"',
      'colour = "blue"',
      "",
      "[[proxy.fallback]]",
      'name = "local"',
      'endpoint = "not a url"',
      'wire = "anthropic"',
    ].join("\n");
    expect(problems(src)).toEqual([
      "lazy.toml:2:8 server.port — expected a number, got a string",
      "lazy.toml:3:1 server.colour — unknown key (expected one of: bind, port, web)",
      'lazy.toml:7:12 proxy.fallback[0].endpoint — expected an http(s) URL for the fallback endpoint, like "https://api.example.com"',
    ]);
  });

  test("[[proxy.fallback]]: a fallback speaking another wire than the primary's, and a short rate limit in `on`, are refused at their place", () => {
    const src = ["[[proxy.fallback]]", 'name = "backup"', 'endpoint = "http://127.0.0.1:9"', 'wire = "openai"', 'on = ["5xx", "429"]'].join(
      "\n",
    );
    expect(problems(src)).toEqual([
      'lazy.toml:4:8 proxy.fallback[0].wire — expected "anthropic": a fallback backs the primary upstream, which speaks the Anthropic wire; an endpoint speaking "openai" cannot answer its requests',
      'lazy.toml:5:6 proxy.fallback[0].on — a short rate limit ("429") is never rerouted: it clears in seconds; list "quota" for a used-up window or balance',
    ]);
  });

  test("[proxy] remote_bind on loopback is refused: containers arriving there would pass for sessions on this machine", () => {
    expect(problems('[proxy]\nremote_bind = "127.0.0.1"\n')).toEqual([
      "lazy.toml:2:15 proxy.remote_bind — a loopback address: containers reaching the proxy there would pass for sessions on this machine; give an address of this host that the engine's containers route to",
    ]);
    expect(loadText('[proxy]\nremote_bind = "10.213.0.1"\n').ok).toBe(true);
  });

  test("[usage_pause]: thresholds 1–100, windows 5h and 7d only, each problem at its place", () => {
    const lines = problems('[usage_pause]\nthreshold = 150\n"5h" = "90%"\n"1h" = 50\n');
    expect(lines[0]).toStartWith("lazy.toml:2:13 usage_pause.threshold — ");
    expect(lines[1]).toBe("lazy.toml:3:8 usage_pause.5h — expected a number, got a string");
    expect(lines[2]).toBe("lazy.toml:4:1 usage_pause.1h — unknown key (expected one of: threshold, 5h, 7d)");
    expect(loadText('[usage_pause]\nthreshold = 90\n"7d" = 95\n').ok).toBe(true);
  });

  test("[container.limits]: on by default; a limit that does not parse is refused at its place", () => {
    const ok = loadText("");
    expect(ok.ok).toBe(true);
    if (ok.ok) expect(ok.config.container.limits).toEqual({ pids: 1024, memory: "auto", cpus: "auto", disk: "10g" });
    const lines = problems('[container.limits]\npids = 10\nmemory = "lots"\ncpus = "many"\ndisk = "512"\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toStartWith("lazy.toml:2:8 container.limits.pids — ");
    expect(lines[1]).toStartWith('lazy.toml:3:10 container.limits.memory — expected a size of at least 64m such as "4g"');
    expect(lines[2]).toStartWith("lazy.toml:4:8 container.limits.cpus — ");
    expect(lines[3]).toStartWith('lazy.toml:5:8 container.limits.disk — expected a size of at least 16m such as "10g"');
    expect(loadText('[container.limits]\npids = "off"\nmemory = "512m"\ncpus = 1.5\ndisk = "off"\n').ok).toBe(true);
    expect(resolveLimits({ pids: 256, memory: "512m", cpus: "off", disk: "64m" })).toEqual({
      pids: 256,
      memory: 512 * 1024 ** 2,
      nanoCpus: 0,
      disk: 64 * 1024 ** 2,
    });
    expect(resolveLimits({ pids: "off", memory: "off", cpus: 0.5, disk: "off" })).toEqual({ pids: 0, memory: 0, nanoCpus: 5e8, disk: 0 });
  });

  test("a syntax error names its place", () => {
    expect(problems("[server]\nport = \n")[0]).toMatch(/^lazy\.toml:2:\d+ \(document\) — not valid TOML/);
  });

  test("profiles: built-ins need no harness, others do; roles must name a profile", () => {
    const lines = problems(
      '[profiles.claude]\nmodel = "claude-sonnet-4-5"\n\n[profiles.local]\nmodel = "qwen"\n\n[models.roles]\nagent = "ghost"\n',
    );
    expect(lines).toHaveLength(2);
    expect(lines[0]).toStartWith("lazy.toml:4:1 profiles.local — missing: expected harness");
    expect(lines[1]).toBe('lazy.toml:8:9 models.roles.agent — expected the name of a profile; "ghost" is not defined');
  });

  test("inline tables and arrays are located too", () => {
    expect(problems('[proxy]\nupstreams = { anthropic = "x", bogus = 1 }\n')).toEqual([
      'lazy.toml:2:27 proxy.upstreams.anthropic — expected an http(s) URL for upstreams.anthropic, like "https://api.example.com"',
      "lazy.toml:2:32 proxy.upstreams.bogus — unknown key (expected one of: anthropic, openai, cursor, ollama, openrouter)",
    ]);
  });

  test("defaults and the contract keys", () => {
    const r = loadText("");
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.server).toEqual({ bind: "127.0.0.1", port: 26024, web: true });
    expect(r.config.proxy.bind).toBe("127.0.0.1");
    const full = loadText(`
[server]
bind = "127.0.0.1"
port = 27000
web = false
[proxy]
bind = "127.0.0.1"
port = 27100
[proxy.upstreams]
anthropic = "http://127.0.0.1:9999"
openai = "http://127.0.0.1:9998"
cursor = "http://127.0.0.1:9997"
[[proxy.fallback]]
name = "ollama"
endpoint = "http://127.0.0.1:11434"
wire = "anthropic"
credential = "none"
model = "qwen3-coder"
on = ["reset", "529"]
[profiles.work]
harness = "codex"
model = "gpt-5"
endpoint = "https://openrouter.ai/api/v1"
wire = "openai"
credential = "work-openai"
[models.roles]
agent = "work"
[container]
image = "node:22"
setup = "npm ci"
[usage_pause]
threshold = 90
`);
    expect(full.ok).toBe(true);
  });

  test("containers cannot reach metadata addresses unless [container] allow_metadata says so", () => {
    for (const src of ["", "[container]\n", '[container]\nimage = "node:22"\n']) {
      const r = loadText(src);
      expect(r.ok && r.config.container.allow_metadata).toBe(false);
    }
    const on = loadText("[container]\nallow_metadata = true\n");
    expect(on.ok && on.config.container.allow_metadata).toBe(true);
    expect(problems('[container]\nallow_metadata = "yes"\n')[0]).toMatch(/^lazy\.toml:2:\d+ container\.allow_metadata/);
    expect(starter()).toContain("# allow_metadata = false");
  });

  test("the starter lazy init writes loads", () => {
    expect(loadText(starter()).ok).toBe(true);
  });
});
