/**
 * Reading lazy.toml: parse with smol-toml, validate with the one schema, and turn every
 * problem into one line `lazy.toml:LINE:COL path — what was expected`, all at once.
 */

import { existsSync } from "node:fs";
import { join } from "node:path";
import { parse, TomlError } from "smol-toml";
import type { z } from "zod";
import { readRegular } from "../util/bounded-read";
import { type Located, locate, pathKey } from "./positions";
import { Config, crossCheck } from "./schema";

export const FILE = "lazy.toml";

export interface Problem {
  line: number;
  col: number;
  path: string;
  message: string;
}

export type Loaded = { ok: true; config: Config; present: boolean } | { ok: false; problems: Problem[] };

export const formatProblem = (p: Problem) => `${FILE}:${p.line}:${p.col} ${p.path || "(document)"} — ${p.message}`;

export function load(root: string): Loaded {
  const file = join(root, FILE);
  if (!existsSync(file)) return { ok: true, config: Config.parse({}), present: false };
  const read = readConfigText(file);
  return "problem" in read ? { ok: false, problems: [read.problem] } : loadText(read.text);
}

/** The largest lazy.toml lazy reads (a real one is a few KiB). */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** A lazy.toml's text, read with a bound (util/bounded-read.ts: the daemon reads it before every API request). */
export function readConfigText(file: string): { text: string } | { problem: Problem } {
  const read = readRegular(file, MAX_CONFIG_BYTES);
  if ("text" in read) return read;
  return {
    problem: { line: 1, col: 1, path: "", message: `${file} ${read.why}, so lazy does not read it: make it a plain file of a few KiB.` },
  };
}

export function loadText(src: string): Loaded {
  let doc: unknown;
  try {
    doc = parse(src);
  } catch (e) {
    if (!(e instanceof TomlError)) throw e;
    const message = e.message.replace(/^Invalid TOML document: /, "").split("\n")[0] ?? "invalid TOML";
    return { ok: false, problems: [{ line: e.line, col: e.column, path: "", message: `not valid TOML: ${message}` }] };
  }
  const result = Config.safeParse(doc, { reportInput: true });
  const cross = crossCheck(doc);
  if (result.success && cross.length === 0) return { ok: true, config: result.data, present: true };
  const where = locate(src);
  const problems = (result.success ? [] : result.error.issues.flatMap((issue) => toProblems(issue, where))).concat(
    cross.map((c) => {
      const loc = find(where, c.path);
      return { ...(loc.value ?? loc.key), path: pathKey(c.path), message: c.message };
    }),
  );
  problems.sort((a, b) => a.line - b.line || a.col - b.col);
  return { ok: false, problems };
}

function toProblems(issue: z.core.$ZodIssue, where: Map<string, Located>): Problem[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((k) => {
      const full = [...path, k];
      const at = find(where, full).key;
      return { ...at, path: pathKey(full), message: `unknown key (expected one of: ${knownKeys(path)})` };
    });
  }
  if (issue.code === "invalid_key") {
    const full = [...path];
    const at = find(where, full).key;
    return [{ ...at, path: pathKey(full), message: issue.issues[0]?.message ?? "invalid name" }];
  }
  const loc = find(where, path);
  return [{ ...(loc.value ?? loc.key), path: pathKey(path), message: describe(issue) }];
}

function find(where: Map<string, Located>, path: (string | number)[]): Located {
  for (let n = path.length; n > 0; n--) {
    const hit = where.get(pathKey(path.slice(0, n)));
    if (hit) return hit;
  }
  return { key: { line: 1, col: 1 } };
}

function describe(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined
        ? `missing: expected ${article(issue.expected)}`
        : `expected ${article(issue.expected)}, got ${typeName(issue.input)}`;
    case "invalid_value":
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
      return issue.origin === "array"
        ? `expected at least ${issue.minimum} entries`
        : issue.origin === "string"
          ? "expected a non-empty string"
          : `expected a number ≥ ${issue.minimum}`;
    case "too_big":
      return `expected a number ≤ ${issue.maximum}`;
    case "invalid_format":
      return issue.message.startsWith("expected") ? issue.message : `expected ${issue.format}`;
    default:
      return issue.message;
  }
}

const typeName = (v: unknown) =>
  Array.isArray(v) ? "an array" : v === null ? "null" : typeof v === "object" ? "a table" : article(typeof v);
const article = (t: string) => (t === "int" ? "an integer" : /^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);

/** The keys the schema accepts at a path, for the "unknown key" line. */
function knownKeys(path: (string | number)[]): string {
  let node: z.ZodType = Config;
  for (const p of path) {
    node = unwrap(node);
    const def = (node as unknown as { def: Record<string, unknown> }).def;
    if (typeof p === "number" && def.type === "array") node = def.element as z.ZodType;
    else if (def.type === "record") node = def.valueType as z.ZodType;
    else if (def.type === "object") node = (def.shape as Record<string, z.ZodType>)[p] ?? node;
  }
  node = unwrap(node);
  const def = (node as unknown as { def: Record<string, unknown> }).def;
  return def.type === "object" ? Object.keys(def.shape as object).join(", ") : "?";
}

function unwrap(t: z.ZodType): z.ZodType {
  let node = t;
  for (;;) {
    const def = (node as unknown as { def: { type: string; innerType?: z.ZodType; in?: z.ZodType; schema?: z.ZodType } }).def;
    if ((def.type === "default" || def.type === "optional" || def.type === "prefault") && def.innerType) node = def.innerType;
    else if (def.type === "pipe" && def.in) node = def.in;
    else return node;
  }
}
