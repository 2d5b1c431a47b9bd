/**
 * Where each key of a TOML document sits, so every config problem can say
 * `lazy.toml:LINE:COL`. smol-toml parses; this only locates, and it runs only on a document
 * smol-toml has already accepted, so it can be forgiving about what it does not need.
 */

export interface Pos {
  line: number;
  col: number;
}
export interface Located {
  key: Pos;
  value?: Pos;
}

/** `proxy.fallback[0].endpoint` */
export function pathKey(path: readonly (string | number)[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += (out ? "." : "") + (/^[A-Za-z0-9_-]+$/.test(p) ? p : JSON.stringify(p));
  }
  return out;
}

export function locate(src: string): Map<string, Located> {
  const map = new Map<string, Located>();
  const arrayCounts = new Map<string, number>();
  let i = 0;
  let line = 1;
  let lineStart = 0;
  let table: (string | number)[] = [];

  const pos = (): Pos => ({ line, col: i - lineStart + 1 });
  const peek = (o = 0) => src[i + o] ?? "";
  const advance = () => {
    if (src[i] === "\n") {
      line++;
      lineStart = i + 1;
    }
    i++;
  };
  const skipWs = () => {
    while (peek() === " " || peek() === "\t") advance();
  };
  const skipWsNlComments = () => {
    for (;;) {
      const c = peek();
      if (c === " " || c === "\t" || c === "\r" || c === "\n") advance();
      else if (c === "#") while (i < src.length && peek() !== "\n") advance();
      else return;
    }
  };
  const record = (path: (string | number)[], at: Located) => {
    const k = pathKey(path);
    if (!map.has(k)) map.set(k, at);
  };

  const readString = (): string => {
    const q = peek();
    const triple = src.startsWith(q.repeat(3), i);
    if (triple) {
      for (let n = 0; n < 3; n++) advance();
      let out = "";
      while (i < src.length && !src.startsWith(q.repeat(3), i)) {
        if (q === '"' && peek() === "\\") {
          out += src[i]! + (src[i + 1] ?? "");
          advance();
        } else out += src[i]!;
        advance();
      }
      for (let n = 0; n < 3; n++) advance();
      while (peek() === q) advance(); // up to two quotes may close a multi-line string
      return out;
    }
    advance();
    let out = "";
    while (i < src.length && peek() !== q && peek() !== "\n") {
      if (q === '"' && peek() === "\\") {
        advance();
        const e = peek();
        out += e === "n" ? "\n" : e === "t" ? "\t" : e;
      } else out += peek();
      advance();
    }
    advance();
    return out;
  };

  const readKey = (): { parts: string[]; at: Pos } => {
    const at = pos();
    const parts: string[] = [];
    for (;;) {
      skipWs();
      const c = peek();
      if (c === '"' || c === "'") parts.push(readString());
      else {
        let s = "";
        while (/[A-Za-z0-9_-]/.test(peek())) {
          s += peek();
          advance();
        }
        parts.push(s);
      }
      skipWs();
      if (peek() === ".") {
        advance();
        continue;
      }
      return { parts, at };
    }
  };

  const readValue = (path: (string | number)[]) => {
    const c = peek();
    if (c === '"' || c === "'") return void readString();
    if (c === "[") {
      let idx = 0;
      return readItems("]", skipWsNlComments, () => {
        const at = pos();
        record([...path, idx], { key: at, value: at });
        readValue([...path, idx]);
        idx++;
      });
    }
    // An inline table stays on one line: no newlines or comments between its pairs.
    if (c === "{") return readItems("}", skipWs, () => readPair(path));
    while (i < src.length && !/[,\]}\n#]/.test(peek())) advance();
  };

  /** An array's or inline table's items, from its opening bracket past its closing one. */
  const readItems = (close: string, skip: () => void, item: () => void) => {
    advance();
    for (;;) {
      skip();
      if (peek() === close || i >= src.length) return void advance();
      if (peek() === ",") advance();
      else item();
    }
  };

  const readPair = (base: (string | number)[]) => {
    const { parts, at } = readKey();
    skipWs();
    if (peek() === "=") advance();
    skipWs();
    const full = [...base, ...parts];
    for (let n = 1; n < parts.length; n++) record([...base, ...parts.slice(0, n)], { key: at });
    record(full, { key: at, value: pos() });
    readValue(full);
  };

  while (i < src.length) {
    skipWsNlComments();
    if (i >= src.length) break;
    if (peek() === "[") {
      const at = pos();
      const isArray = peek(1) === "[";
      advance();
      if (isArray) advance();
      const { parts } = readKey();
      while (i < src.length && peek() !== "\n") advance();
      if (isArray) {
        const k = pathKey(parts);
        const idx = arrayCounts.get(k) ?? 0;
        arrayCounts.set(k, idx + 1);
        record(parts, { key: at });
        table = [...parts, idx];
        record(table, { key: at });
      } else {
        table = parts;
        record(table, { key: at });
      }
      continue;
    }
    readPair(table);
    while (i < src.length && peek() !== "\n") advance();
  }
  return map;
}
