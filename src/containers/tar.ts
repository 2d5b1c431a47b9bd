/**
 * Tar, both ways, for a remote engine (nothing of this host is mounted there): what lazy ships
 * into a task's container (the worktree, the repository's git data, lazy's binary) is written
 * here with owners and modes of lazy's choosing, and what comes back out of one (the agent's
 * objects, its ref, a turn's files) is read here as the hostile input it is: regular files
 * only, names checked by the caller, every size bounded before a byte is kept.
 */

export interface Entry {
  /** Absolute or relative path; written without a leading slash. */
  name: string;
  type: "file" | "dir" | "link";
  mode: number;
  /** A link's target (as the link holds it, never followed on this host). */
  target?: string;
  uid: number;
  /** A file's bytes (read lazily for large files). */
  data?: Uint8Array | (() => Uint8Array);
}

const enc = new TextEncoder();

function header(name: string, type: "0" | "2" | "5" | "x", size: number, mode: number, uid: number, link = ""): Uint8Array {
  const h = new Uint8Array(512);
  const put = (s: string, off: number, len: number) => h.set(enc.encode(s).slice(0, len), off);
  put(name, 0, 100);
  put(`${mode.toString(8).padStart(7, "0")}\0`, 100, 8);
  put(`${uid.toString(8).padStart(7, "0")}\0`, 108, 8);
  put(`${uid.toString(8).padStart(7, "0")}\0`, 116, 8);
  put(`${size.toString(8).padStart(11, "0")}\0`, 124, 12);
  put(
    `${Math.floor(Date.now() / 1000)
      .toString(8)
      .padStart(11, "0")}\0`,
    136,
    12,
  );
  put("        ", 148, 8);
  put(type, 156, 1);
  put(link, 157, 100);
  put("ustar\0", 257, 6);
  put("00", 263, 2);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8);
  return h;
}

const pad = (n: number) => new Uint8Array((512 - (n % 512)) % 512);

/** A PAX record "LEN path=VALUE\n", its length counting itself. */
function paxRecord(key: string, value: string): Uint8Array {
  const body = ` ${key}=${value}\n`;
  const n = enc.encode(body).length;
  let len = n + 1;
  while (String(len).length + n !== len) len = String(len).length + n;
  return enc.encode(`${len}${body}`);
}

/** The archive as chunks (large files are not copied into one buffer). */
export function write(entries: Entry[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const e of entries) {
    const name = e.name.replace(/^\/+/, "") + (e.type === "dir" ? "/" : "");
    const data = e.type === "file" ? (typeof e.data === "function" ? e.data() : (e.data ?? new Uint8Array())) : new Uint8Array();
    const target = e.type === "link" ? (e.target ?? "") : "";
    if (enc.encode(name).length > 99 || enc.encode(target).length > 99) {
      const rec = Buffer.concat([paxRecord("path", name), ...(target ? [paxRecord("linkpath", target)] : [])]);
      out.push(header("PaxHeader", "x", rec.length, 0o644, 0), rec, pad(rec.length));
    }
    const flag = e.type === "dir" ? "5" : e.type === "link" ? "2" : "0";
    out.push(header(name.slice(0, 99), flag, data.length, e.mode, e.uid, target.slice(0, 99)), data, pad(data.length));
  }
  out.push(new Uint8Array(1024));
  return out;
}

export interface ReadEntry {
  name: string;
  /** "file" for a regular file; anything else (link, device, FIFO) is named by its type flag. */
  type: "file" | "dir" | "other";
  size: number;
  /** Kept only for regular files within the caller's bound. */
  data?: Uint8Array;
}

export class TarRefused extends Error {}

/**
 * Read an archive an agent could have shaped: headers are checked (checksum, octal sizes),
 * PAX paths honoured, and a file's bytes kept only when `keep(name, size)` says so and the
 * whole read stays within `maxTotal`. Links and special files are returned as "other", never
 * followed or kept.
 */
export function read(buf: Uint8Array, keep: (name: string, size: number) => boolean, maxTotal: number): ReadEntry[] {
  const out: ReadEntry[] = [];
  const dec = new TextDecoder();
  let i = 0;
  let kept = 0;
  let paxPath: string | undefined;
  const field = (off: number, len: number) => {
    const s = dec.decode(buf.subarray(off, off + len));
    const z = s.indexOf("\0");
    return z < 0 ? s : s.slice(0, z);
  };
  while (i + 512 <= buf.length) {
    const h = buf.subarray(i, i + 512);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let k = 0; k < 512; k++) sum += k >= 148 && k < 156 ? 32 : h[k]!;
    if (Number.parseInt(field(i + 148, 8).trim(), 8) !== sum) throw new TarRefused("a tar header's checksum does not match");
    const sizeText = field(i + 124, 12).trim();
    if (!/^[0-7]*$/.test(sizeText)) throw new TarRefused("a tar header's size is not octal");
    const size = Number.parseInt(sizeText || "0", 8);
    const flag = String.fromCharCode(h[156]!);
    const prefix = field(i + 345, 155);
    const base = field(i, 100);
    const start = i + 512;
    if (start + size > buf.length) throw new TarRefused("the archive ends inside a file");
    i = start + size + ((512 - (size % 512)) % 512);
    if (flag === "x") {
      if (size > 64 * 1024) throw new TarRefused("a PAX header over 64 KiB");
      for (const m of dec.decode(buf.subarray(start, start + size)).matchAll(/\d+ path=([^\n]*)\n/g)) paxPath = m[1];
      continue;
    }
    if (flag === "g") continue;
    const name = (paxPath ?? (prefix ? `${prefix}/${base}` : base)).replace(/\/+$/, "");
    paxPath = undefined;
    const type = flag === "0" || flag === "\0" ? "file" : flag === "5" ? "dir" : "other";
    const entry: ReadEntry = { name, type, size: type === "file" ? size : 0 };
    if (type === "file" && keep(name, size)) {
      kept += size;
      if (kept > maxTotal) throw new TarRefused(`what came back is over ${maxTotal} bytes`);
      entry.data = buf.slice(start, start + size);
    }
    out.push(entry);
  }
  return out;
}
