/** Shared by the broker's source tests: a logger that keeps its lines, and executable scripts in a temp dir. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../../src/util/log";

/** A Logger whose lines a test reads back (to prove no secret reached one). */
export function keptLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const put = (level: string) => (msg: string) => void lines.push(`${level} ${msg}`);
  return {
    lines,
    debug: put("debug"),
    info: put("info"),
    warn: put("warn"),
    error: put("error"),
    repeated: (level, _key, msg) => void lines.push(`${level} ${msg}`),
  };
}

export function tempDir(): { dir: string; script(name: string, body: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), "lazy-broker-test-"));
  return {
    dir,
    script(name, body) {
      const path = join(dir, name);
      writeFileSync(path, `#!/bin/sh\n${body}\n`);
      chmodSync(path, 0o755);
      return path;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
