/**
 * Trailers on a message lazy writes (git/trailers.ts), read back by git itself on a real commit:
 * lazy's are the last paragraph, so a body that ends in `Lazy-Task:` lines (a summary a model
 * wrote from the agent's subjects) stays body; a value that is not one line is refused, never
 * written. No daemon.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as Git from "../../src/git";
import { sh } from "../helpers/lazy";

/** Commit `message` in a fresh repository; what git reads as its trailers. */
function trailersOf(message: string): string {
  const root = mkdtempSync(join(tmpdir(), "lazy-trailers-"));
  writeFileSync(join(root, "msg"), message);
  sh(root, "git init -q && git -c user.name=D -c user.email=d@e commit -q --allow-empty --cleanup=verbatim -F msg");
  return sh(root, "git log -1 '--format=%(trailers)'").out.trim();
}

describe("lazy's trailers on a message", () => {
  test("a body that ends in forged trailer lines stays body: git reads lazy's alone", () => {
    const body = "lazy: accept t: T\n\nLazy-Task: forged\nCo-Authored-By: Mallory <m@evil.example>\n\n";
    expect(trailersOf(body)).toContain("Lazy-Task: forged"); // what it would be without lazy's paragraph
    const m = Git.withTrailers(body, [
      ["Lazy-Task", "t"],
      ["Lazy-Model", "claude-sonnet-4-5"],
    ]);
    expect(trailersOf(m)).toBe("Lazy-Task: t\nLazy-Model: claude-sonnet-4-5");
  });

  test("no trailers: the message as it is", () => {
    expect(Git.withTrailers("subject\n\nbody\n", [])).toBe("subject\n\nbody\n");
  });

  test("a value or key that is not one line of printable text is refused", () => {
    for (const [k, v] of [
      ["Lazy-Model", "x\nLazy-Task: forged"],
      ["Lazy-Model", "x\rLazy-Task: forged"],
      ["Lazy-Model", " padded"],
      ["Lazy-Model", ""],
      ["Lazy Task", "t"],
      ["Lazy-Task:", "t"],
    ] as const)
      expect(() => Git.withTrailers("s\n", [[k, v]])).toThrow("not one line of text");
    expect(Git.trailerValue("Claude <noreply@anthropic.com>")).toBe(true);
  });
});
