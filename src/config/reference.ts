/**
 * lazy.toml's reference, read off the one schema (schema.ts) through zod's JSON Schema: every
 * table and every key with its type, default and description. The starter `lazy init` writes
 * (starter.ts), docs/config.md and docs/lazy.schema.json (scripts/gen-config-docs.ts, checked by
 * `bun run check`) are all made from it, so none can leave a key out or drift from what the
 * loader accepts. Every default is the schema's: none is applied in code after loading.
 */
import { z } from "zod";
import { Config } from "./schema";
import { INERT } from "./trust";

/** One key: where it is, what it takes, what it is when unset. */
export interface Key {
  /** As written in its table: `port`, `"5h"`. */
  name: string;
  /** `server.port`, `profiles.NAME.model`, `service.app.id`. */
  path: string;
  type: string;
  /** The default as TOML, or undefined when unset means "none". */
  default?: string;
  required: boolean;
  description: string;
}

/** One table: `[server]`, `[profiles.NAME]`, `[[proxy.fallback]]`, `[service.app]`. */
export interface Table {
  /** The dotted name, without brackets: `container.limits`, `profiles.NAME`. */
  name: string;
  /** An array of tables: written `[[name]]`, once per entry. */
  array: boolean;
  description: string;
  keys: Key[];
}

interface Json {
  type?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  properties?: Record<string, Json>;
  additionalProperties?: Json | boolean;
  required?: string[];
  items?: Json;
  anyOf?: Json[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
}

const isTable = (j: Json) => j.type === "object" && !!j.properties;
const isNamedTables = (j: Json) => j.type === "object" && typeof j.additionalProperties === "object" && isTable(j.additionalProperties);
const isTableArray = (j: Json) => j.type === "array" && !!j.items && isTable(j.items);

/** A bare TOML key, or the quoted one (`"5h"`). */
const keyName = (k: string) => (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(k) ? k : JSON.stringify(k));

/** A value as TOML writes it (inline). */
export function tomlValue(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(", ")}]`;
  if (v && typeof v === "object") {
    const e = Object.entries(v);
    return e.length ? `{ ${e.map(([k, x]) => `${keyName(k)} = ${tomlValue(x)}`).join(", ")} }` : "{}";
  }
  return String(v);
}

const range = (j: Json): string => {
  const lo = j.minimum ?? (j.exclusiveMinimum !== undefined ? j.exclusiveMinimum + (j.type === "integer" ? 1 : 0) : undefined);
  const hi = j.maximum !== undefined && j.maximum < 9_000_000_000_000_000 ? j.maximum : undefined;
  if (lo !== undefined && hi !== undefined) return ` ${lo}–${hi}`;
  if (lo !== undefined) return ` ≥ ${lo}`;
  if (hi !== undefined) return ` ≤ ${hi}`;
  return "";
};

/** A key's type in words: `integer 0–65535`, `"allowlist" or "open"`, `list of string`. */
export function typeOf(j: Json): string {
  if (j.anyOf) return j.anyOf.map(typeOf).join(" or ");
  if (j.const !== undefined) return JSON.stringify(j.const);
  if (j.enum) return j.enum.map((e) => JSON.stringify(e)).join(" or ");
  if (j.type === "array") return `list of ${j.items ? typeOf(j.items) : "values"}`;
  if (j.type === "object") return `table of ${typeof j.additionalProperties === "object" ? typeOf(j.additionalProperties) : "values"}`;
  if (j.type === "string") return j.format === "uri" ? "URL" : "string";
  if (j.type === "integer" || j.type === "number") return `${j.type}${range(j)}`;
  return j.type ?? "value";
}

/** Every table of lazy.toml, in the schema's order, each table before the ones inside it. */
const schemaOf = () => z.toJSONSchema(Config, { io: "input", unrepresentable: "any" }) as Json & Record<string, unknown>;

export function tables(): Table[] {
  const root = schemaOf();
  const out: Table[] = [];
  const walk = (name: string, j: Json, array: boolean) => {
    const table: Table = { name, array, description: j.description ?? "", keys: [] };
    out.push(table);
    const inner: [string, Json, boolean][] = [];
    for (const [k, v] of Object.entries(j.properties ?? {})) {
      const at = name ? `${name}.${keyName(k)}` : keyName(k);
      if (isTable(v)) inner.push([at, v, false]);
      else if (isNamedTables(v)) inner.push([`${at}.NAME`, { ...(v.additionalProperties as Json), description: v.description }, false]);
      else if (isTableArray(v)) inner.push([at, { ...v.items!, description: v.description ?? v.items!.description }, true]);
      else {
        const fixed = v.default;
        table.keys.push({
          name: keyName(k),
          path: at,
          type: typeOf(v),
          ...(fixed !== undefined ? { default: tomlValue(fixed) } : {}),
          required: !!j.required?.includes(k) && fixed === undefined,
          description: v.description ?? "",
        });
      }
    }
    for (const [n, v, a] of inner) walk(n, v, a);
  };
  walk("", root, false);
  // The document itself has no keys of its own, only tables.
  return out.filter((t) => t.name || t.keys.length);
}

/**
 * docs/lazy.schema.json: lazy.toml's JSON Schema (what an editor's TOML support validates and
 * completes against; `#:schema ./docs/lazy.schema.json` or the editor's own setting). Checks
 * written as code (a URL's scheme, an allow entry's form) are the loader's alone.
 */
export function jsonSchema(): string {
  const { $schema, ...rest } = schemaOf();
  return `${JSON.stringify({ $schema, title: "lazy.toml", ...rest }, null, 2)}\n`;
}

/** Keys and tables of the schema that have no description, by path (`server.port`): each one fails the check. */
export function undescribed(): string[] {
  const out: string[] = [];
  const walk = (at: string, j: Json) => {
    for (const [k, v] of Object.entries(j.properties ?? {})) {
      const path = at ? `${at}.${keyName(k)}` : keyName(k);
      if (!v.description) out.push(path);
      walk(path, v);
    }
    if (typeof j.additionalProperties === "object") walk(`${at}.NAME`, j.additionalProperties);
    if (j.items) walk(at, j.items);
    for (const a of j.anyOf ?? []) walk(at, a);
  };
  walk("", schemaOf());
  return out;
}

/** Every key's path, for a check that something names them all. */
export const keyPaths = (): string[] => tables().flatMap((t) => t.keys.map((k) => k.path));

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** docs/config.md: the reference as Markdown, one section a table. */
export function markdown(): string {
  const lines = [
    "# lazy.toml reference",
    "",
    "<!-- Generated from src/config/schema.ts by `bun scripts/gen-config-docs.ts`: do not edit by hand.",
    "     `bun run check` fails when this file differs from what the script writes. -->",
    "",
    "lazy.toml sits at the project root. Every key is optional unless marked required; `lazy init`",
    "writes a starter that shows every key below, commented out. A key that is not listed here is an",
    'error, named with its line and column. A file that sets any key not marked "No trust needed"',
    "is used only after `lazy trust` (and again after each change to such a key). The same keys,",
    "as a JSON Schema for an editor, are in docs/lazy.schema.json.",
    "",
  ];
  for (const t of tables()) {
    lines.push(`## ${t.array ? `[[${t.name}]]` : `[${t.name}]`}`, "");
    if (t.description) lines.push(t.description, "");
    if (t.name.includes("NAME")) lines.push("`NAME` is yours to choose.", "");
    if (t.array) lines.push(`Repeat the table for each entry.`, "");
    if (!t.keys.length) continue;
    lines.push("| key | type | default | description |", "|---|---|---|---|");
    for (const k of t.keys)
      lines.push(
        `| \`${cell(k.name)}\` | ${cell(k.type)} | ${k.default !== undefined ? `\`${cell(k.default)}\`` : k.required ? "required" : "none"} | ${cell(k.description)}${INERT.includes(k.path) ? " No trust needed." : ""} |`,
      );
    lines.push("");
  }
  return `${lines.join("\n").trimEnd()}\n`;
}
