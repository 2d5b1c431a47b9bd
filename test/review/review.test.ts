/**
 * The review's rules, as the person and the agent read them (src/review): the comment file's
 * format and its refusals, which lines of a diff a comment may name (added and unchanged lines by
 * their number in the branch, removed ones by their number in the base), and the message the
 * agent gets. The daemon and the page use these same functions (test/dashboard/review.test.ts
 * drives them end to end).
 */
import { describe, expect, test } from "bun:test";
import * as Review from "../../src/review";

const diff: Review.ShownDiff = {
  branch: "lazy/fix",
  files: [
    {
      path: "src/a.ts",
      binary: false,
      hunks: [
        { header: "@@ -10,4 +10,4 @@ function f()", lines: [" keep", "-old line", "+new line", " keep too", " last"] },
        { header: "@@ -40,2 +40,3 @@", lines: [" forty", "+added", " forty-one"] },
      ],
    },
    { path: "logo.png", binary: true, hunks: [] },
  ],
};

describe("the review file", () => {
  test("comments, removed lines, continued lines; comment lines and blanks skipped", () => {
    const r = Review.parseFile("# mine\n\nsrc/a.ts:11: rename this\n  and this\nsrc/a.ts:-11: why?\n", "r.txt");
    expect(r.problems).toEqual([]);
    expect(r.comments).toEqual([
      { path: "src/a.ts", line: 11, side: "new", text: "rename this\nand this" },
      { path: "src/a.ts", line: 11, side: "old", text: "why?" },
    ]);
  });

  test("a line that is not a comment is named with its file and number", () => {
    const r = Review.parseFile("src/a.ts:11: fine\nno colon here\nsrc/a.ts:0: zero\n  \tstray\nsrc/a.ts:12:\n", "r.txt");
    expect(r.problems.map((p) => p.split(" (")[0])).toEqual(["r.txt:2: not a comment", "r.txt:3: not a comment", "r.txt:5: not a comment"]);
    const lead = Review.parseFile("  indented first\n", "r.txt");
    expect(lead.problems).toEqual(["r.txt:1: an indented line goes on with a comment, and none comes before it"]);
  });
});

describe("which lines a comment may name", () => {
  test("added and unchanged lines by the branch's numbers, removed ones by the base's; each quoted", () => {
    const r = Review.check(diff, [
      { path: "src/a.ts", line: 11, side: "new", text: "new" },
      { path: "src/a.ts", line: 11, side: "old", text: "old" },
      { path: "src/a.ts", line: 41, side: "new", text: "added" },
    ]);
    expect(r.problems).toEqual([]);
    expect(r.ok.map((c) => c.quote)).toEqual(["new line", "old line", "added"]);
  });

  test("a line or file the diff does not show is refused with the lines it does show", () => {
    const r = Review.check(diff, [
      { path: "src/a.ts", line: 30, side: "new", text: "x" },
      { path: "src/a.ts", line: 12, side: "old", text: "x" },
      { path: "src/b.ts", line: 1, side: "new", text: "x" },
      { path: "logo.png", line: 1, side: "new", text: "x" },
      { path: "src/a.ts", line: 10, side: "new", text: "  " },
    ]);
    expect(r.ok).toEqual([]);
    expect(r.problems).toEqual([
      "src/a.ts:30: not a line of the diff (it shows lines 10-13, 40-42 of src/a.ts).",
      "src/a.ts:12 (removed): not a line of the diff (the lines it removes from src/a.ts are 11, numbered as in the base).",
      "src/b.ts:1: src/b.ts is not in the diff of lazy/fix (its changed files are what a review comments on).",
      "logo.png:1: the diff shows no lines of logo.png (a binary file).",
      "src/a.ts:10: the comment is empty.",
    ]);
  });
});

test("the agent's message: each comment with its file and line, the line quoted, the person's note last", () => {
  const { ok } = Review.check(diff, [
    { path: "src/a.ts", line: 11, side: "new", text: "rename this" },
    { path: "src/a.ts", line: 11, side: "old", text: "why remove it?" },
  ]);
  const m = Review.message("lazy/fix", ok, "Thanks.");
  expect(m).toContain("src/a.ts:11: rename this\n    > new line");
  expect(m).toContain("src/a.ts:11 (removed): why remove it?\n    > old line");
  expect(m.endsWith("\n\nThanks.")).toBe(true);
});
