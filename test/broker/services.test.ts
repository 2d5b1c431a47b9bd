/**
 * `[[service]]` as lazy.toml takes it (every problem named with its line) and as the broker uses
 * it (the shape's defaults, which host a CONNECT belongs to); the swap of a task's placeholder in
 * the forms a client sends it; the guard that cuts an answer carrying the real token.
 */
import { describe, expect, test } from "bun:test";
import { guarded } from "../../src/broker/guard";
import { covers, servicesOf } from "../../src/broker/services";
import { carriesMine, foreignIn, swapIn } from "../../src/broker/swap";
import { loadText } from "../../src/config";
import { formsOf } from "../../src/egress";

const load = (toml: string) => loadText(toml);

describe("[[service]] in lazy.toml", () => {
  test("a shape and a source is a whole setup; the shape fills in hosts, auth and url", () => {
    const r = load('[[service]]\nshape = "github"\ncommand = ["gh", "auth", "token"]\n');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const [s] = servicesOf(r.config);
    expect(s!.name).toBe("github");
    expect(s!.hosts).toContain("github.com");
    expect(s!.auth).toEqual({ kind: "basic", user: "x-access-token" });
    expect(s!.source).toEqual({ kind: "command", argv: ["gh", "auth", "token"], ttlMs: 5 * 60_000 });
    expect(s!.push).toBe(false);
  });

  test("npm with its own host gets the host's URL; a GitHub App its defaults", () => {
    const r = load(
      '[[service]]\nshape = "npm"\nhosts = ["npm.corp:8443"]\nscopes = ["@acme"]\ncredential = "npm-corp"\n\n[[service]]\nshape = "github"\nname = "gh-app"\napp = { id = 42, key = "app-key" }\n',
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const [npm, app] = servicesOf(r.config);
    expect(npm!.url).toBe("https://npm.corp:8443/");
    expect(npm!.auth).toEqual({ kind: "bearer" });
    expect(app!.source).toMatchObject({ kind: "app", appId: "42", key: "app-key", api: "https://api.github.com" });
  });

  for (const [name, toml, words] of [
    ["no source", '[[service]]\nshape = "npm"\n', "missing: a source"],
    ["two sources", '[[service]]\nshape = "npm"\ncredential = "a"\ncommand = ["x"]\n', "set one source, not credential and command"],
    ["a custom service without hosts", '[[service]]\nname = "x"\ncredential = "a"\n', "missing: hosts"],
    ["a host with a scheme", '[[service]]\nname = "x"\nhosts = ["https://x.org"]\ncredential = "a"\n', "expected a host"],
    [
      "two services of one name",
      '[[service]]\nshape = "npm"\ncredential = "a"\n[[service]]\nshape = "npm"\ncredential = "b"\n',
      'a second service named "npm"',
    ],
    ["a ttl under 10 s", '[[service]]\nshape = "npm"\ncommand = ["x"]\nttl = "5s"\n', "at least 10s"],
    ["an app on an npm service", '[[service]]\nshape = "npm"\napp = { id = 1, key = "k" }\n', 'shape = "github"'],
    ["an unknown key", '[[service]]\nshape = "npm"\ncredential = "a"\ntoken = "ghp_x"\n', "token"],
  ] as const)
    test(`refused: ${name}, with where and why`, () => {
      const r = load(toml);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      const text = r.problems.map((p) => `${p.line}:${p.col} ${p.path} ${p.message}`).join("\n");
      expect(text).toContain(words);
      expect(text).toMatch(/\d+:\d+ service/);
    });
});

describe("which host a service brokers", () => {
  test("a name on 443 unless a port is given; *. covers names below only", () => {
    expect(covers("github.com", "github.com", 443)).toBe(true);
    expect(covers("github.com", "GitHub.com", 443)).toBe(true);
    expect(covers("github.com", "github.com", 22)).toBe(false);
    expect(covers("github.com", "evilgithub.com", 443)).toBe(false);
    expect(covers("npm.corp:8443", "npm.corp", 8443)).toBe(true);
    expect(covers("npm.corp:8443", "npm.corp", 443)).toBe(false);
    expect(covers("*.corp", "a.corp", 443)).toBe(true);
    expect(covers("*.corp", "corp", 443)).toBe(false);
    expect(covers("*.corp", "xcorp", 443)).toBe(false);
  });
});

describe("the swap", () => {
  const mine = "ghp_lazyAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
  const other = "ghp_lazyBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";
  const find = (t: string) =>
    [mine, other]
      .filter((x) => t.includes(x))
      .map((token) => ({ token, who: token === mine ? "mine" : "task b's placeholder for github" }))[0];
  const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;

  test("the task's placeholder becomes the secret in the form it came: Bearer, token, inside Basic", () => {
    for (const [sent, want] of [
      [`Bearer ${mine}`, "Bearer REAL"],
      [`token ${mine}`, "token REAL"],
      [basic("x-access-token", mine), basic("x-access-token", "REAL")],
    ]) {
      const h = new Headers({ authorization: sent! });
      expect(carriesMine(h, mine)).toBe(true);
      expect(swapIn(h, mine, "REAL").get("authorization")).toBe(want!);
    }
  });

  test("another placeholder is named, never swapped; none at all leaves the headers alone", () => {
    expect(foreignIn(new Headers({ authorization: basic("x", other) }), mine, find)?.who).toBe("task b's placeholder for github");
    expect(foreignIn(new Headers({ "x-any": `pre ${other}` }), mine, find)?.who).toBe("task b's placeholder for github");
    expect(foreignIn(new Headers({ authorization: `Bearer ${mine}` }), null, find)?.who).toBe("mine");
    expect(foreignIn(new Headers({ accept: "*/*" }), mine, find)).toBeUndefined();
    expect(carriesMine(new Headers({ accept: "*/*" }), mine)).toBe(false);
  });
});

describe("the guard on an answer", () => {
  const secret = "ghp_REALREALREALREALREALREALREALREAL1234";
  const forms = formsOf(secret).map((f) => f.text);
  const through = async (chunks: string[]) => {
    let hit = false;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const x of chunks) c.enqueue(new TextEncoder().encode(x));
        c.close();
      },
    });
    let text = "";
    let error: string | undefined;
    try {
      text = await new Response(guarded(body, forms, () => (hit = true))).text();
    } catch (e) {
      error = (e as Error).message;
    }
    return { hit, text, error };
  };

  test("an answer without the secret passes whole, byte for byte", async () => {
    const r = await through(["hello ", "world", "x".repeat(100_000)]);
    expect(r.hit).toBe(false);
    expect(r.text).toBe(`hello world${"x".repeat(100_000)}`);
  });

  test("the secret cut across two chunks, or base64-encoded, is found and none of it passes", async () => {
    const half = secret.length >> 1;
    for (const chunks of [
      ["echo: ", secret.slice(0, half), secret.slice(half), " end"],
      [`{"auth":"Basic ${Buffer.from(`x:${secret}`).toString("base64")}"}`],
    ]) {
      const r = await through(chunks);
      expect(r.hit).toBe(true);
      expect(r.error).toContain("real token");
      expect(r.text).not.toContain(secret);
    }
  });
});
