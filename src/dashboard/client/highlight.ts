/**
 * Syntax highlighting of diff lines (issue 37) with Prism's tokenizer: Prism core and a few
 * grammars, bundled into the client (about 12 KB gzipped; highlight.js core and the same
 * languages were 20 KB). Prism is asked for tokens only, never for HTML: each token becomes an
 * element made here, its text a text node, its class from the grammar's token name. So whatever
 * an agent's line holds (`<script>`, `</span>`, quotes, escapes) stays text. Control bytes show
 * as `\x1b`, as the CLI shows them. Lines are highlighted one at a time (a construct spanning
 * lines, a block comment, reads as plain text past its first line).
 */
import "./prism-manual";
import Prism, { type Grammar, type Token } from "prismjs/components/prism-core";
import "prismjs/components/prism-clike";
import "prismjs/components/prism-javascript";
import "prismjs/components/prism-typescript";
import "prismjs/components/prism-python";
import "prismjs/components/prism-bash";
import "prismjs/components/prism-json";
import "prismjs/components/prism-css";
import "prismjs/components/prism-markup";
import "prismjs/components/prism-go";
import "prismjs/components/prism-rust";
import "prismjs/components/prism-yaml";
import "prismjs/components/prism-toml";

const BY_EXT: Record<string, string> = {
  ts: "typescript",
  tsx: "typescript",
  mts: "typescript",
  cts: "typescript",
  js: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  py: "python",
  sh: "bash",
  bash: "bash",
  zsh: "bash",
  json: "json",
  css: "css",
  html: "markup",
  htm: "markup",
  xml: "markup",
  svg: "markup",
  vue: "markup",
  go: "go",
  rs: "rust",
  yml: "yaml",
  yaml: "yaml",
  toml: "toml",
};

/** The grammar for a file, by its name's extension; null: shown plain. */
export function grammarFor(path: string): Grammar | null {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase();
  const name = ext ? BY_EXT[ext] : undefined;
  return (name && Prism.languages[name]) || null;
}

// C0 controls but tab and carriage return (a CRLF file's line end), DEL, and the C1 controls
// (U+009B is a CSI): shown, never obeyed.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control bytes is the point
const CONTROL = /[\x00-\x08\x0a-\x0c\x0e-\x1f\x7f-\x9f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as CONTROL, to split on
const CONTROLS = /([\x00-\x08\x0a-\x0c\x0e-\x1f\x7f-\x9f])/;

export const hasControl = (s: string): boolean => CONTROL.test(s);

/** `s` as nodes: text, with each control byte as a `\xNN` marked as such. */
function texts(s: string, into: Node): void {
  if (!CONTROL.test(s)) {
    into.appendChild(document.createTextNode(s));
    return;
  }
  s.split(CONTROLS).forEach((part, i) => {
    if (!part) return;
    if (i % 2) {
      const c = document.createElement("span");
      c.className = "ctl";
      c.textContent = `\\x${part.charCodeAt(0).toString(16).padStart(2, "0")}`;
      into.appendChild(c);
    } else into.appendChild(document.createTextNode(part));
  });
}

const cls = (t: Token) =>
  ["tk", t.type, ...(Array.isArray(t.alias) ? t.alias : t.alias ? [t.alias] : [])]
    .map((c) => (c === "tk" ? c : `tk-${c.replace(/[^A-Za-z0-9-]/g, "")}`))
    .join(" ");

function tokens(ts: string | Token | (string | Token)[], into: Node): void {
  if (typeof ts === "string") {
    texts(ts, into);
    return;
  }
  if (!Array.isArray(ts)) ts = [ts];
  for (const t of ts) {
    if (typeof t === "string") {
      texts(t, into);
      continue;
    }
    const el = document.createElement("span");
    el.className = cls(t);
    tokens(t.content, el);
    into.appendChild(el);
  }
}

/** Fill `el` with a diff line: its first character (+, -, space) as it is, the rest highlighted by `grammar` (null: plain). */
export function paint(el: HTMLElement, line: string, grammar: Grammar | null): void {
  el.textContent = "";
  if (!line) {
    el.textContent = " ";
    return;
  }
  texts(line[0]!, el);
  const rest = line.slice(1);
  if (grammar && rest) tokens(Prism.tokenize(rest, grammar), el);
  else texts(rest, el);
}
