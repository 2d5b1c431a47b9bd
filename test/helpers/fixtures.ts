/**
 * The setup the container and attack tests share, in one place: a project on the test image
 * with a mock provider as its upstream and a first commit, the wait for a task's turn to end,
 * one model request through the proxy on a grant, an untrusted write of lazy.toml, and a test
 * file's own beforeAll/afterAll in one line each (anthropicProject, keyedProject, teardown).
 */
import { afterAll, beforeAll, expect } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { needDocker, TEST_IMAGES } from "./env";
import { BIN, cleanupAll, Project, sh, until } from "./lazy";
import * as Mock from "./providers";

export const upstream = (url: string) => `[proxy.upstreams]\nanthropic = "${url}"\n`;

/** lazy.toml on the test image: `container` is more of the [container] table, `extra` more tables after the upstream. */
export const containerToml = (url: string, opts: { container?: string; extra?: string } = {}) =>
  `[container]\nbase = "${TEST_IMAGES.node}"\n${opts.container ?? ""}\n${upstream(url)}${opts.extra ?? ""}`;

export interface ContainerProjectOptions {
  /** The whole lazy.toml, instead of containerToml's. */
  toml?: string;
  /** The project's environment (see Project). */
  env?: Record<string, string>;
  /** An existing folder to be the checkout, its modes untouched (see Project). */
  root?: string;
  /** An existing empty folder to be LAZY_HOME (see Project). */
  home?: string;
  /** More of the [container] table (lines after `base`). */
  container?: string;
  /** More tables after [proxy.upstreams]. */
  extra?: string;
  /**
   * The first commit: "files" (the default) commits README.md, .gitignore and what `files` put
   * there; "empty" commits nothing and configures no identity (lazy.toml stays untracked).
   */
  firstCommit?: "files" | "empty";
  /** Put files in the checkout before the first commit (it commits all that .gitignore lets in). */
  files?: (root: string) => void;
  /** A README.md in the first commit (default true). */
  readme?: boolean;
  /** .gitignore's lines (default: lazy.toml, so the test's config stays out of the tasks' branches). */
  ignore?: string[];
}

/**
 * A project for tasks in real containers: needs Docker (throws saying how to start one), its
 * lazy.toml names the test image and `mock` as the anthropic upstream, it has a first commit
 * by Dev <dev@example.com>, and `key` is stored as its anthropic credential (the daemon runs).
 */
export async function containerProject(mock: Mock.MockProvider, key: string, opts: ContainerProjectOptions = {}): Promise<Project> {
  await needDocker();
  const p = new Project({ toml: opts.toml ?? containerToml(mock.url, opts), env: opts.env, root: opts.root, home: opts.home });
  let init: ReturnType<typeof sh>;
  // The Project made an empty first commit (not in a folder it was given): this one replaces it.
  const amend = opts.root ? "" : "--amend --reset-author";
  if (opts.firstCommit === "empty")
    init = sh(p.root, `git -c user.name=Dev -c user.email=dev@example.com commit -q --allow-empty ${amend} -m init`);
  else {
    opts.files?.(p.root);
    if (opts.readme ?? true) writeFileSync(join(p.root, "README.md"), "# demo\n");
    writeFileSync(join(p.root, ".gitignore"), `${(opts.ignore ?? ["lazy.toml"]).join("\n")}\n`);
    init = sh(p.root, `git config user.email dev@example.com && git config user.name Dev && git add -A && git commit -q ${amend} -m init`);
  }
  if (init.code !== 0) throw new Error(`the first commit failed: ${init.err}`);
  // Files a build or a task reads (.worktreeinclude, what the Dockerfile copies) are trusted with
  // lazy.toml: approved as their person would after writing them.
  if (opts.files) p.trust();
  await p.setCredential("anthropic", key);
  return p;
}

/** A file's beforeAll: a mock Anthropic provider and a containerProject on it with `key` stored. */
export async function anthropicProject(
  key: string,
  opts: ContainerProjectOptions = {},
): Promise<{ anthropic: Mock.MockProvider; p: Project }> {
  const anthropic = await Mock.anthropic();
  // A project that cannot be made (no Docker) leaves no mock behind for the file's afterAll to miss.
  const p = await containerProject(anthropic, key, opts).catch(async (e) => {
    await anthropic.close();
    throw e;
  });
  return { anthropic, p };
}

/**
 * anthropicProject with a mock OpenAI as well: the `openai` upstream, a `codex` profile on
 * gpt-5 (before `extra`'s tables) and `openaiKey` stored.
 */
export async function codexProject(
  key: string,
  openaiKey: string,
  opts: ContainerProjectOptions = {},
): Promise<{ anthropic: Mock.MockProvider; openai: Mock.MockProvider; p: Project }> {
  const openai = await Mock.openai();
  const { anthropic, p } = await anthropicProject(key, { ...opts, extra: `${codexTables(openai.url)}${opts.extra ?? ""}` }).catch(
    async (e) => {
      await openai.close();
      throw e;
    },
  );
  await p.setCredential("openai", openaiKey);
  return { anthropic, openai, p };
}

/** Lines for [proxy.upstreams] and after: `openai` at `url` and a `codex` profile on gpt-5. */
export const codexTables = (url: string) => `openai = "${url}"\n\n[profiles.codex]\nmodel = "gpt-5"\n`;

/** anthropicProject with no container: no Docker, no first commit; `extra` after [proxy.upstreams]' anthropic line. */
export async function anthropicHost(key: string, extra = ""): Promise<{ anthropic: Mock.MockProvider; p: Project }> {
  const anthropic = await Mock.anthropic();
  return { anthropic, p: await keyedProject(`${upstream(anthropic.url)}${extra}`, { anthropic: key }) };
}

/** The model servers provider profiles reach: a local Ollama, a hosted one, and OpenRouter (under /api, answering both wires). */
export async function providerMocks(): Promise<{ local: Mock.MockProvider; hosted: Mock.MockProvider; openrouter: Mock.MockProvider }> {
  const [local, hosted, openrouter] = await Promise.all([Mock.ollama(), Mock.ollama(), Mock.ollama()]);
  openrouter.prefix = "/api";
  return { local, hosted, openrouter };
}

/** anthropicHost with a mock OpenAI as well: the `openai` upstream, a `codex` profile on gpt-5 and `openaiKey` stored. */
export async function codexHost(
  key: string,
  openaiKey: string,
): Promise<{ anthropic: Mock.MockProvider; openai: Mock.MockProvider; p: Project }> {
  const openai = await Mock.openai();
  const { anthropic, p } = await anthropicHost(key, codexTables(openai.url));
  await p.setCredential("openai", openaiKey);
  return { anthropic, openai, p };
}

/**
 * For attacks on where a key goes, a file's two upstreams: the person's (`good`) and the
 * attacker's, two mock Anthropic providers made in the file's beforeAll. Its afterAll closes them
 * after every Project the file made, then removes `scratch` (folders made outside any Project).
 */
export function upstreamsForFile(): { good: Mock.MockProvider; attacker: Mock.MockProvider; scratch: string[] } {
  const up = { scratch: [] as string[] } as { good: Mock.MockProvider; attacker: Mock.MockProvider; scratch: string[] };
  beforeAll(async () => {
    [up.good, up.attacker] = await Promise.all([Mock.anthropic(), Mock.anthropic()]);
  });
  afterAll(() => cleanupAll(up.good, up.attacker, scratched(up.scratch)));
  return up;
}

/** A Project on `toml` (no first commit) with each credential of `keys` stored, in order: `{ anthropic: KEY }`. */
export async function keyedProject(toml: string, keys: Record<string, string>, env?: Record<string, string>): Promise<Project> {
  const p = new Project({ toml, env });
  for (const [provider, key] of Object.entries(keys)) await p.setCredential(provider, key);
  return p;
}

/** A file's afterAll: lazy's containers for `p` (or each of a list), every Project the file made, then the mock providers. */
export async function teardown(p: Project | Project[] | undefined, ...mocks: ({ close(): Promise<void> } | undefined)[]): Promise<void> {
  for (const q of Array.isArray(p) ? p : [p]) removeContainers(q);
  await cleanupAll(...mocks);
}

/** A file's beforeAll when its tests need Docker but make their own projects: the mock Anthropic provider, once Docker answers. */
export async function dockerAnthropic(): Promise<Mock.MockProvider> {
  await needDocker();
  return Mock.anthropic();
}

/** Folders a test made outside any Project, for cleanupAll to remove after the mocks: `cleanupAll(mock, scratched(dirs))`. */
export const scratched = (dirs: string[]) => ({
  close: async () => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  },
});

/** A daemon's state folder as the proxy's grant files sit in it (`<tmp>/daemon/proj-1234abcd`, not made yet), for a test alone. */
export const stateDir = (prefix: string) => join(mkdtempSync(join(tmpdir(), prefix)), "daemon", "proj-1234abcd");
/** Remove what stateDir made. */
export const removeStateDir = (dir: string) => rmSync(join(dir, "..", ".."), { recursive: true, force: true });

/** For containerProject's `files`: copy these files of `dir` (a test's own folder) into the checkout. */
export const copying =
  (dir: string, ...names: string[]) =>
  (root: string): void => {
    for (const n of names) copyFileSync(join(dir, n), join(root, n));
  };

/** Remove every container lazy made for the project (running or not), whatever its daemon knows. */
export function removeContainers(p: Project | undefined): void {
  if (!p) return;
  for (const c of sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.split("\n").filter(Boolean))
    sh("/", `docker rm -f ${c}`);
}

/** `lazy task show REF --json` (what the API answers: the task and its events) once its turn has ended. */
export async function settled(p: Project, ref: string, timeoutMs = 300_000): Promise<any> {
  return until(
    async () => {
      // The API, not the CLI: a task with thousands of events makes a large answer, asked often.
      const s = await p.api("GET", `/api/tasks/${encodeURIComponent(ref)}`);
      return s.task.status !== "running" && s.task.status !== "queued" ? s : undefined;
    },
    timeoutMs,
    `task ${ref} to end its turn`,
  );
}

/**
 * Why a task's turn ended as it did, for a failed assertion in a CI log: the task's last lines of
 * `lazy logs`, its MCP requests as lazy's audit saw them, and the daemon log's warnings and errors.
 */
export async function whyEnded(p: Project, ref: string): Promise<string> {
  const logs = await p.run(["logs", ref]);
  const tail = `${logs.stdout}${logs.stderr}`.trimEnd().split("\n").slice(-40).join("\n");
  const audit = await p.run(["stats", "audit", "--task", ref, "--json"]);
  let mcp = "";
  try {
    mcp = (JSON.parse(audit.stdout).rows as any[])
      .filter((r) => r.path === "/mcp")
      .map((r) => `${new Date(r.at).toISOString().slice(11, 23)} ${r.method} ${r.status} ${Math.round(r.durationMs)} ms ${r.note ?? ""}`)
      .join("\n");
  } catch {
    mcp = `(lazy stats audit: ${audit.stderr.trim()})`;
  }
  const daemon = p.log().trimEnd().split("\n").slice(-40).join("\n");
  const harness = claudeMcpLog(p);
  // The sockets on the port the harness was told (ss names each one's process).
  const port = /transport to http:\/\/[^/]*:(\d+)\//.exec(harness)?.[1];
  const sockets = port ? sh("/", `ss -tanpH '( sport = :${port} or dport = :${port} )' 2>&1 | head -30`).out.trim() : "";
  return [
    `--- lazy logs ${ref}, its last lines:\n${tail}`,
    `--- its MCP requests (audit):\n${mcp || "none"}`,
    `--- the daemon log's last lines:\n${daemon || "none"}`,
    `--- Claude Code's MCP log:\n${harness || "none"}`,
    ...(port ? [`--- sockets on port ${port} now:\n${sockets || "none"}`] : []),
  ].join("\n");
}

/**
 * Claude Code's own MCP log lines (it keeps them in the task's home, under .cache), the last 30
 * across the project's tasks: what it tried and why it gave up, in its words.
 */
function claudeMcpLog(p: Project): string {
  const found = sh(p.stateDir, "find tasks -path '*mcp-logs-*' -name '*.jsonl' -type f 2>/dev/null | sort").out.split("\n").filter(Boolean);
  const lines: string[] = [];
  for (const f of found)
    for (const l of readFileSync(join(p.stateDir, f), "utf8").split("\n").filter(Boolean)) {
      try {
        const j = JSON.parse(l);
        lines.push(`${String(j.timestamp).slice(11, 23)} ${f.split("/")[1]} ${j.debug ?? j.error ?? l}`.slice(0, 400));
      } catch {
        lines.push(l.slice(0, 400));
      }
    }
  return lines.slice(-30).join("\n");
}

/**
 * `settled`, asserting the status the turn ended in. When it is another, the failure carries
 * why (whyEnded), so a CI log says why the turn ended as it did.
 */
export async function settledAs(p: Project, ref: string, want = "done", timeoutMs?: number): Promise<any> {
  const s = await settled(p, ref, timeoutMs);
  if (s.task.status !== want) expect(`${s.task.status}\n${await whyEnded(p, ref)}`).toBe(want);
  return s;
}

/** `lazy task add PROMPT --code CODE FLAGS…`, then `lazy start CODE`: a task launched as a person does it. */
export async function launched(p: Project, code: string, prompt: string, ...flags: string[]): Promise<void> {
  await p.ok(["task", "add", prompt, "--code", code, ...flags]);
  await p.ok(["start", code]);
}

/** `launched`, then the status its turn ended in. */
export async function launchedStatus(p: Project, code: string, prompt: string, timeoutMs?: number): Promise<string> {
  await launched(p, code, prompt);
  return (await settled(p, code, timeoutMs)).task.status;
}

/**
 * `launched`, with the mock's answer (`reply`) held back `delayMs` before its first byte; returns
 * once the turn's model request is in flight, so a daemon killed now dies mid-turn. (Claude
 * Code's HEAD probe and MCP connection come first: killed before those, the turn would lose
 * lazy's tools and fail, as it should.)
 */
export async function inFlight(
  p: Project,
  mock: Mock.MockProvider,
  turn: { code: string; prompt: string; reply: string; delayMs: number; timeoutMs?: number },
): Promise<void> {
  mock.answer({ text: turn.reply });
  mock.behavior = { kind: "silent-then-stream", firstByteDelayMs: turn.delayMs, gapMs: 0 };
  await launched(p, turn.code, turn.prompt);
  await until(() => mock.received.some((x) => x.method === "POST") || undefined, turn.timeoutMs ?? 180_000, "the turn's model request");
}

/** `launched`, with the mock never answering: returns once the turn's first request hangs there (a turn held running). */
export async function hanging(p: Project, mock: Mock.MockProvider, code: string, prompt: string): Promise<void> {
  mock.reset();
  mock.behavior = { kind: "hang" };
  await launched(p, code, prompt);
  await mock.waitFor(1, 120_000);
}

/** The pid the daemon's keeper recorded (keeper.json), or undefined while there is none. */
export const keeperPid = (p: Project): number | undefined => {
  try {
    return JSON.parse(readFileSync(join(p.stateDir, "keeper.json"), "utf8")).pid;
  } catch {
    return undefined;
  }
};

/**
 * One model request through the project's proxy on a placeholder grant (the host's unless a
 * task is named), as a harness would make it: the status it got.
 */
export async function oneRequest(p: Project, task?: string): Promise<number> {
  const g = await p.grant(task ? { role: "agent", task } : { role: "host" });
  const res = await fetch(`${g.proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** `lazy accept CODE` (no --with-config) refused, its stderr naming each of `named`: that stderr. */
export async function acceptRefused(p: Project, code: string, ...named: string[]): Promise<string> {
  const r = await p.run(["accept", code]);
  expect(r.code, r.stderr).not.toBe(0);
  for (const line of named) expect(r.stderr).toContain(line);
  return r.stderr;
}

/** Write lazy.toml as another process would (a pull, a checkout, an agent): nobody ran lazy trust. */
export const edit = (p: Project, text: string, dir = p.root) => writeFileSync(join(dir, "lazy.toml"), text);

/** The mock provider's answer that has real Claude Code run `command` with its Bash tool (the agent's act), then say `text`. */
export const bash = (text: string, command: string, description: string, more: Record<string, unknown> = {}) => ({
  text,
  toolUse: { name: "Bash", input: { command, description, ...more } },
});

/**
 * `bash`: the agent writes `content` (printf's format) to `file` and commits it as "add FILE",
 * then runs `then` if given, and says `text`.
 */
export const commits = (file: string, content: string, text: string, then?: string) =>
  bash(
    text,
    `printf '${content}' > ${file} && git add ${file} && git commit -qm 'add ${file}'${then ? ` && ${then}` : ""}`,
    "commit a file",
  );

/** `lazy start CODE` succeeds; when it does not, the failure shows its stderr and the daemon log's last errors and warnings. */
export async function startsOk(p: Project, code: string): Promise<void> {
  const r = await p.run(["start", code]);
  const log = p.log().split("\n");
  expect(
    r.code,
    `${r.stderr}${log
      .filter((l) => / (ERROR|WARN) /.test(l))
      .slice(-8)
      .join("\n")}`,
  ).toBe(0);
}

/** A running `lazy watch ARGS` in `p`, its stdout lines collected as they come. */
export function watching(p: Project, args: string[]) {
  const proc = Bun.spawn([BIN, "watch", ...args], { cwd: p.root, env: p.fullEnv(), stdout: "pipe", stderr: "pipe" });
  const lines: string[] = [];
  void (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of proc.stdout) {
      buf += dec.decode(chunk, { stream: true });
      const parts = buf.split("\n");
      buf = parts.pop()!;
      lines.push(...parts.filter(Boolean));
    }
  })();
  return { proc, lines, stop: () => proc.kill() };
}

/** lazy ARGS in `p` with a deadline: a command that hangs is killed and reported as such. */
export async function lazyWithin(p: Project, args: string[], ms: number): Promise<{ code: number | null; stderr: string; hung: boolean }> {
  const proc = Bun.spawn([BIN, ...args], { cwd: p.root, env: p.fullEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    proc.kill(9);
  }, ms);
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code: hung ? null : code, stderr, hung };
}
