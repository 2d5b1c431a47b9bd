/**
 * Paths as git prints them in a patch header or blame's porcelain: a path with a byte git finds
 * unusual (a control character, `"` or `\`, and with core.quotePath on, any byte over 0x7f) is
 * printed in double quotes with C escapes (`"a\tb"`, `"\303\251.ts"`). An agent names its files,
 * so every such form turns up; this reads one back to the path's own bytes.
 */

const ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };

/** The path a quoted or bare git path stands for (a bare one is returned as it is); null when a quoted one is malformed. */
export function unquotePath(s: string): string | null {
  if (!s.startsWith('"')) return s;
  if (s.length < 2 || !s.endsWith('"')) return null;
  const bytes: number[] = [];
  const body = s.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '"') return null; // an unescaped quote inside: not git's quoting
    if (c !== "\\") {
      for (const b of Buffer.from(c, "utf8")) bytes.push(b);
      continue;
    }
    const e = body[++i];
    if (e === undefined) return null;
    if (e in ESCAPES) bytes.push(ESCAPES[e]!);
    else if (/[0-3]/.test(e) && /^[0-7]{2}$/.test(body.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else return null;
  }
  return Buffer.from(bytes).toString("utf8");
}
