/**
 * The record's parts without a container (issue 38): which commits of a turn get one (not a
 * person's commit the agent merged in, not a merge), which tool call a range goes to when
 * several wrote the file, a review turn's contributor, [provenance] prompts = false, and the
 * secrets cut from every string. Each record is checked against the Agent Trace schema
 * (test/fixtures/agent-trace-record.schema.json, from
 * https://github.com/cursor/agent-trace/blob/2754f077f3e50c1fb5088183f5c9362077cc8ca1/README.md).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Ajv from "ajv/dist/2020";
import addFormats from "ajv-formats";
import * as Provenance from "../../src/provenance";
import { turnFacts } from "../helpers/turn-facts";

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const valid = ajv.compile(JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/agent-trace-record.schema.json"), "utf8")));

const root = mkdtempSync(join(tmpdir(), "lazy-provenance-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const sh = (cmd: string) => {
  const r = Bun.spawnSync(["sh", "-c", cmd], { cwd: root, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout.toString().trim();
};
sh("git init -q -b main && git config user.name Dev && git config user.email dev@example.com && git commit -q --allow-empty -m init");

const PLACEHOLDER = `sk-ant-api03-lazy-${"Q".repeat(88)}AA`;
const facts = turnFacts;

describe("a turn's commits and their records", () => {
  test("only the agent's commits: a person's commit it merged in gets none, its merge one", async () => {
    const from = sh("git rev-parse HEAD");
    sh("git checkout -q -b lazy/t");
    sh("printf 'a\\n' > a.txt && git add a.txt && git commit -qm agent1");
    const agent1 = sh("git rev-parse HEAD");
    sh("git checkout -q main && printf 'p\\n' > p.txt && git add p.txt && git commit -qm person");
    sh("git checkout -q lazy/t && git merge -q --no-edit main");
    const merge = sh("git rev-parse HEAD");
    sh("printf 'b\\n' > b.txt && git add b.txt && git commit -qm agent2");
    const agent2 = sh("git rev-parse HEAD");
    expect((await Provenance.newCommits(root, "lazy/t", from, agent2)).map((c) => c.commit)).toEqual([agent1, merge, agent2]);
    // The clean merge wrote nothing of its own: p.txt is the person's.
    expect((await Provenance.addedByMerge(root, merge)).files).toEqual([]);
  });

  test("a merge that resolved a conflict: its record holds the lines no parent has", async () => {
    sh("git checkout -q -b side2 main && printf 'a\\nb\\nc\\n' > f.txt && git add f.txt && git commit -qm f-base");
    sh("git checkout -q -b agent-side && printf 'a\\nB-agent\\nc\\n' > f.txt && git commit -qam agent");
    sh("git checkout -q side2 && printf 'a\\nB-person\\nc\\n' > f.txt && git commit -qam person");
    sh(
      "git checkout -q agent-side && (git merge -q side2 >/dev/null 2>&1 || true) && printf 'a\\nB-resolved\\nmore\\nc\\n' > f.txt && git add f.txt && git commit -qm merged",
    );
    const got = await Provenance.addedByMerge(root, sh("git rev-parse HEAD"));
    expect(got.files.map((f) => [f.path, f.ranges.map((r) => [r.start, r.end, r.lines])])).toEqual([
      ["f.txt", [[2, 3, ["B-resolved", "more"]]]],
    ]);
    sh("git checkout -q lazy/t");
  });

  test("a merge's own lines are credited to their file, not to a file --cc left out of its patch", async () => {
    // a.txt merges cleanly from two sides (each hunk one parent's: listed by --name-only, no
    // section in the --cc patch); "é b.txt" (quoted by git) has the merge's own line.
    sh("git checkout -q -b cc-base main && seq 1 20 > a.txt && printf 'b\\n' > 'é b.txt' && git add . && git commit -qm cc-base");
    sh("git checkout -q -b cc-side && sed -i 's/^2$/two-side/' a.txt && printf 'b\\nside\\n' > 'é b.txt' && git commit -qam side");
    sh("git checkout -q cc-base && sed -i 's/^18$/eighteen-main/' a.txt && printf 'b\\nmain\\n' > 'é b.txt' && git commit -qam main");
    sh("(git merge -q cc-side >/dev/null 2>&1 || true) && printf 'b\\nevil\\n' > 'é b.txt' && git add . && git commit -qm merged");
    const got = await Provenance.addedByMerge(root, sh("git rev-parse HEAD"));
    expect(got.files.map((f) => [f.path, f.ranges.map((r) => [r.start, r.end, r.lines])])).toEqual([["é b.txt", [[2, 2, ["evil"]]]]]);
    sh("git checkout -q lazy/t");
  });

  test("ranges go to the tool call that wrote them; the rest to the turn", async () => {
    sh("git checkout -q lazy/t");
    writeFileSync(join(root, "m.ts"), "one\ntwo\nthree\n");
    sh("git add m.ts && git commit -qm base");
    writeFileSync(join(root, "m.ts"), "first edit line\ntwo\nthree\nsecond edit line\n");
    writeFileSync(join(root, "n.ts"), "by a script\n");
    sh("git add m.ts n.ts && git commit -qm edits");
    const c = sh("git rev-parse HEAD");
    const tools: Provenance.ToolCall[] = [
      { id: "toolu_1", name: "Edit", input: "file_path: /wt/m.ts\nold_string: one\nnew_string: first edit line", at: 2 },
      { id: "toolu_2", name: "Edit", input: "file_path: /wt/m.ts\nold_string: three\nnew_string: three\nsecond edit line", at: 3 },
      { id: "toolu_3", name: "Bash", input: "sh gen.sh > n.ts", at: 4 },
    ];
    const rec = Provenance.recordOf(c, await Provenance.added(root, c), facts({ tools }));
    expect(valid(rec), JSON.stringify(valid.errors)).toBe(true);
    const m = rec.files.find((f) => f.path === "m.ts")!;
    const byTool = Object.fromEntries(
      m.conversations.map((v) => [v.related?.find((r) => r.type === "tool_call")?.url ?? "turn", v.ranges.map((r) => r.start_line)]),
    );
    expect(byTool).toEqual({ "lazy:task/abcd1234/turn/1/tool/toolu_1": [1], "lazy:task/abcd1234/turn/1/tool/toolu_2": [4] });
    const n = rec.files.find((f) => f.path === "n.ts")!;
    expect(n.conversations).toHaveLength(1);
    expect(n.conversations[0]!.related?.some((r) => r.type === "tool_call") ?? false).toBe(false);
    // The turn's audit rows are linked once for the record, not in each conversation.
    expect(rec.metadata?.["dev.lazy"]?.related).toEqual([{ type: "model_call", url: "lazy:audit/7" }]);
    expect(n.conversations[0]!.contributor).toEqual({ type: "ai", model_id: "anthropic/claude-sonnet-4-5" });
    expect(rec.metadata?.["dev.lazy"]?.tools.map((t) => t.id)).toEqual(["toolu_1", "toolu_2"]);
  });

  test("a review's turn is mixed; prompts = false keeps its text out; secrets and queries are cut everywhere", async () => {
    const c = sh("git rev-parse HEAD");
    const review = `Review of your changes on lazy/t: 1 comment(s)\n\nm.ts:1: use ${PLACEHOLDER} at https://x.example/a?token=zzz`;
    const changed = await Provenance.added(root, c);
    const rec = Provenance.recordOf(
      c,
      changed,
      facts({ turn: 2, asked: { kind: "review", text: review }, cut: { secrets: [PLACEHOLDER] } }),
    );
    expect(valid(rec), JSON.stringify(valid.errors)).toBe(true);
    expect(rec.files[0]!.conversations[0]!.contributor?.type).toBe("mixed");
    expect(rec.metadata?.["dev.lazy"]?.shaped_by).toBe("review");
    const text = JSON.stringify(rec);
    expect(text).not.toContain(PLACEHOLDER);
    expect(text).not.toContain("token=zzz");
    expect(rec.metadata?.["dev.lazy"]?.prompt?.text).toContain(`use ${Provenance.SECRET} at https://x.example/a?…`);
    const quiet = Provenance.recordOf(c, changed, facts({ turn: 2, asked: { kind: "review", text: review }, prompts: false }));
    expect(quiet.metadata?.["dev.lazy"]?.prompt).toBeUndefined();
    expect(quiet.metadata?.["dev.lazy"]?.shaped_by).toBe("review");
  });

  test("a file made a link (two patch sections, one name) keeps the files after it paired right", async () => {
    sh("printf 'x\\n' > k1 && printf 'y\\n' > k2 && git add k1 k2 && git commit -qm links-base");
    sh("rm k1 && ln -s k2 k1 && printf 'z\\n' >> k2 && git add -A k1 k2 && git commit -qm links");
    const got = await Provenance.added(root, sh("git rev-parse HEAD"));
    expect(got.files.map((f) => [f.path, f.ranges.map((r) => [r.start, r.end, r.lines])])).toEqual([
      ["k1", [[1, 1, ["k2"]]]],
      ["k2", [[2, 2, ["z"]]]],
    ]);
  });

  test("a note written is read back as the record; a commit without one reads null", async () => {
    const c = sh("git rev-parse HEAD");
    const rec = Provenance.recordOf(c, await Provenance.added(root, c), facts());
    expect((await Provenance.writeTurn(root, "lazy/t", sh("git rev-parse HEAD~1"), c, facts())).written).toEqual([c]);
    expect((await Provenance.readRecord(root, c))?.vcs).toEqual(rec.vcs);
    expect(await Provenance.readRecord(root, sh("git rev-parse main"))).toBeNull();
  });
});
