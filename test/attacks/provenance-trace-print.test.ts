/**
 * `lazy trace` against a hostile record (issue 38). A record is data: the agent wrote its tool
 * inputs, and the notes ref travels with `git fetch`, so a teammate's (or any local process's)
 * note can hold anything a JSON string can. Written here straight into refs/notes/agent-trace:
 * escape sequences (CSI, OSC with BEL) and carriage returns in the tool call's input and the
 * prompt, line breaks that try to forge lazy's own field lines in the model, the harness, the
 * task and the tool's name, a tool input of many lines, and fields of the wrong type. What must
 * hold: no control byte reaches the terminal, each of lazy's field lines appears once and in
 * order, every other line is indented under its field, a long input is cut to a few lines with
 * the rest counted, and a field of the wrong type is shown, not fatal.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, Project, sh } from "../helpers/lazy";

afterAll(cleanupAll);

const ok = (cwd: string, cmd: string) => {
  const r = sh(cwd, cmd);
  if (r.code !== 0) throw new Error(`${cmd}: ${r.err}`);
  return r.out.trim();
};

const LABELS = ["  task       ", "  turn       ", "  model      ", "  tool call  ", "  commit     ", "  asked by   "];

function hostile(commit: string, input: unknown) {
  const tool = "lazy:task/abcd/turn/1/tool/x";
  return {
    version: "0.1.0",
    id: "11111111-1111-4111-8111-111111111111",
    timestamp: "2026-12-07T00:00:00Z",
    vcs: { type: "git", revision: commit },
    tool: { name: "lazy" },
    files: [
      {
        path: "a.ts",
        conversations: [
          {
            contributor: { type: "ai\n  task       forged-by-type", model_id: "evil\n  task       forged-by-model\x1b[2J" },
            ranges: [{ start_line: 1, end_line: 3 }],
            related: [{ type: "tool_call", url: tool }],
          },
        ],
      },
    ],
    metadata: {
      "dev.lazy": {
        task: {
          id: "abcd\r\n  turn       forged-by-id",
          code: "x\n  commit     forged-by-code",
          title: "T\u2028  asked by   forged-by-title",
        },
        turn: 1,
        harness: "claude\r\n  model      forged-by-harness",
        tools: [{ url: tool, id: "toolu\r1", name: "Write\n  commit     forged-by-name", input }],
        prompt: { kind: "task", text: "do it\x1b]0;pwned-title\x07\r\n  commit     forged-by-prompt\x1b[2J\rhidden" },
      },
    },
  };
}

describe("lazy trace prints a hostile record inert", () => {
  test("escapes and carriage returns in the tool input and the prompt, forged field lines, a long input, wrong types", async () => {
    const p = new Project({ toml: "" });
    writeFileSync(join(p.root, "a.ts"), "one\ntwo\nthree\n");
    ok(p.root, "git add a.ts && git -c user.name=Agent -c user.email=agent@example.com commit -qm a");
    const c = ok(p.root, "git rev-parse HEAD");
    const input = `line1 \x1b[31mred\x1b[0m\rOVERWRITTEN\n  task       forged-by-input\n${Array.from({ length: 50 }, (_, i) => `more ${i}`).join("\n")}`;
    const note = join(p.home, "note.json");
    writeFileSync(note, JSON.stringify(hostile(c, input)));
    ok(p.root, `git notes --ref agent-trace add -F '${note}' ${c}`);

    const r = await p.ok(["trace", "a.ts:2"]);
    const out = r.stdout;
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the bytes a terminal would obey
    expect(out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]/);
    expect(out).not.toContain("pwned-title\x07");
    const lines = out.replace(/\n$/, "").split("\n");
    expect(lines[0]).toBe("a.ts:2 was written by an agent task:");
    // lazy's field lines: each once, in order; every other line is indented under a field.
    const fields = lines.slice(1).filter((l) => !l.startsWith(" ".repeat(13)));
    expect(fields.map((l) => l.slice(0, 13))).toEqual(LABELS);
    for (const f of fields) expect(f.slice(13)).not.toMatch(/^\s/);
    // A forged line is the agent's text on lazy's line or indented under it, never a line of its own.
    for (const l of lines.filter((l) => l.includes("forged")))
      expect(l.startsWith(" ".repeat(13)) || LABELS.some((x) => l.startsWith(x))).toBe(true);
    expect(fields[2]).toContain("model      evil\\n  task       forged-by-model (contributor: ai\\n  task       fo…)");
    // The input: its first lines, each on its own indented line, the rest counted.
    const tool = lines.slice(lines.indexOf(fields[3]!), lines.indexOf(fields[4]!));
    expect(tool[0]).toBe("  tool call  Write\\n  commit     forged-by-name toolu\\r1: line1 red");
    expect(tool.length).toBeLessThanOrEqual(9);
    expect(tool.at(-1)).toMatch(/^ {13}… \(\d+ more lines\)$/);
    expect(tool).toContain(`${" ".repeat(13)}OVERWRITTEN`);
    const asked = lines.slice(lines.indexOf(fields[5]!));
    expect(asked[0]).toBe("  asked by   the task's prompt: do it");
    expect(asked.slice(1)).toEqual([`${" ".repeat(13)}  commit     forged-by-prompt`, `${" ".repeat(13)}hidden`]);

    // The same record through --json: the strings as the note has them, JSON-escaped.
    const json = JSON.parse((await p.ok(["trace", "a.ts:2", "--json"])).stdout);
    expect(json.tool.input).toBe(input);
    expect(json.contributor.model_id).toBe("evil\n  task       forged-by-model\x1b[2J");

    // Fields of the wrong type (a number, an object): shown, not fatal.
    ok(p.root, `printf 'four\\n' >> a.ts && git add a.ts && git -c user.name=Agent -c user.email=agent@example.com commit -qm b`);
    const d = ok(p.root, "git rev-parse HEAD");
    const odd = hostile(d, { nested: "x\x1b[2J" }) as any;
    odd.files[0].conversations[0].ranges = [{ start_line: 4, end_line: 4 }];
    odd.metadata["dev.lazy"].prompt.text = 42;
    odd.files[0].conversations[0].contributor.model_id = ["m"];
    writeFileSync(note, JSON.stringify(odd));
    ok(p.root, `git notes --ref agent-trace add -F '${note}' ${d}`);
    const shown = (await p.ok(["trace", "a.ts:4"])).stdout;
    expect(shown).toContain(`: {"nested":"x\\u001b[2J"}`);
    expect(shown).toContain("asked by   the task's prompt: 42");
    expect(shown).toContain(`model      ["m"]`);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the bytes a terminal would obey
    expect(shown).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]/);
  }, 60_000);
});
