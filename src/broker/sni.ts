/**
 * The server name a TLS client asks for, read from its ClientHello before lazy answers it. The
 * egress proxy terminates TLS only for brokered hosts, and only when the name inside the
 * handshake (SNI) is the CONNECT target: a container could otherwise CONNECT to one host and
 * speak to another through the broker (domain fronting). The bytes come from the container, so
 * they are hostile: every length is checked against what is there and against a fixed bound
 * before anything is read on, ambiguity (two server_name extensions, two host names) is refused,
 * and nothing here throws. Stateless: call it with all bytes received so far.
 */

/** A ClientHello body longer than this is refused (TLS's own record limit; real ones are < 2 KiB). */
export const MAX_HELLO = 16_384;
/** Records a ClientHello may span: a client sending small records (`max_send_frag 512`) needs ~33. */
export const MAX_RECORDS = 64;
/** The most bytes the caller buffers before this answers something other than `need`. */
export const MAX_BYTES = 4 + MAX_HELLO + MAX_RECORDS * 5;

const RECORD_HANDSHAKE = 22;
const HANDSHAKE_CLIENT_HELLO = 1;
const EXT_SERVER_NAME = 0;
const NAME_HOST = 0;

export type Hello = { need: true } | { sni: string | null } | { bad: string };

/** Raised inside the parser only; `clientHello` turns it into `{ bad }`. */
class Malformed extends Error {}

export function clientHello(buf: Uint8Array): Hello {
  try {
    const message = handshake(buf);
    if (!message) return { need: true };
    return { sni: serverName(message) };
  } catch (e) {
    if (e instanceof Malformed) return { bad: e.message };
    return { bad: `unreadable ClientHello (${(e as Error).message})` };
  }
}

/**
 * The first handshake message, reassembled from the TLS records that carry it; undefined while
 * more bytes are needed. Checks each byte as soon as it is there, so a non-TLS stream is refused
 * on its first byte and an oversized one on its length, not after it was buffered.
 */
function handshake(buf: Uint8Array): Uint8Array | undefined {
  const parts: Uint8Array[] = [];
  let have = 0;
  let want = -1; // 4 + the body's length, once the handshake header is in
  for (let at = 0, records = 0; ; records++) {
    if (records >= MAX_RECORDS) throw new Malformed(`a ClientHello spread over more than ${MAX_RECORDS} TLS records`);
    const len = recordHeader(buf, at);
    if (len === undefined) return undefined;
    const fragment = buf.subarray(at + 5, Math.min(at + 5 + len, buf.length));
    parts.push(fragment);
    have += fragment.length;
    if (want < 0 && have >= 1) want = handshakeHeader(concat(parts, Math.min(have, 4)));
    if (want >= 0 && have >= want) return concat(parts, want).subarray(4);
    if (fragment.length < len) return undefined;
    at += 5 + len;
  }
}

/** A record's fragment length, checked; undefined when its 5-byte header is not all there. */
function recordHeader(buf: Uint8Array, at: number): number | undefined {
  const type = buf[at];
  if (type === undefined) return undefined;
  if (type !== RECORD_HANDSHAKE)
    throw new Malformed(
      at === 0 ? "not TLS (the first byte is not a TLS handshake record)" : `a TLS record of type ${type} inside the ClientHello`,
    );
  const major = buf[at + 1];
  if (major === undefined) return undefined;
  if (major !== 3) throw new Malformed(`not TLS (record version ${major}.x)`);
  const hi = buf[at + 3];
  const lo = buf[at + 4];
  if (buf[at + 2] === undefined || hi === undefined || lo === undefined) return undefined;
  const len = (hi << 8) | lo;
  if (len === 0) throw new Malformed("an empty TLS handshake record");
  if (len > MAX_HELLO) throw new Malformed(`a TLS record of ${len} bytes (the limit is ${MAX_HELLO})`);
  return len;
}

/** The whole handshake message's length (4 + body), or -1 while its 4-byte header is incomplete. */
function handshakeHeader(head: Uint8Array): number {
  if (head[0] !== HANDSHAKE_CLIENT_HELLO) throw new Malformed(`a TLS handshake of type ${head[0]}, not a ClientHello`);
  if (head.length < 4) return -1;
  const len = ((head[1] ?? 0) << 16) | ((head[2] ?? 0) << 8) | (head[3] ?? 0);
  if (len > MAX_HELLO) throw new Malformed(`a ClientHello of ${len} bytes (the limit is ${MAX_HELLO})`);
  return 4 + len;
}

/** The first `n` bytes of the parts, copied only when they span more than one. */
function concat(parts: Uint8Array[], n: number): Uint8Array {
  const first = parts[0];
  if (first && first.length >= n) return first.subarray(0, n);
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    if (at >= n) break;
    const take = p.subarray(0, n - at);
    out.set(take, at);
    at += take.length;
  }
  return out;
}

/** A cursor that refuses to read past its end; an error names the field being read. */
class Reader {
  private at = 0;
  constructor(private readonly buf: Uint8Array) {}
  get left(): number {
    return this.buf.length - this.at;
  }
  bytes(n: number, what: string): Uint8Array {
    if (n > this.left) throw new Malformed(`the ClientHello is cut short in its ${what}`);
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  u8(what: string): number {
    return this.bytes(1, what)[0] ?? 0;
  }
  u16(what: string): number {
    const b = this.bytes(2, what);
    return ((b[0] ?? 0) << 8) | (b[1] ?? 0);
  }
  /** A vector with a 1- or 2-byte length prefix, as its own reader. */
  vector(prefix: 1 | 2, what: string): Reader {
    const n = prefix === 1 ? this.u8(what) : this.u16(what);
    return new Reader(this.bytes(n, what));
  }
}

/** The body of a ClientHello (RFC 8446 4.1.2, RFC 5246 7.4.1.2) down to its server_name. */
function serverName(body: Uint8Array): string | null {
  const r = new Reader(body);
  r.bytes(2 + 32, "version and random");
  if (r.vector(1, "session id").left > 32) throw new Malformed("a ClientHello session id longer than 32 bytes");
  const suites = r.vector(2, "cipher suites");
  if (suites.left === 0 || suites.left % 2) throw new Malformed("a ClientHello with a malformed cipher suite list");
  if (r.vector(1, "compression methods").left === 0) throw new Malformed("a ClientHello without compression methods");
  if (r.left === 0) return null; // no extensions at all (an old client)
  const exts = r.vector(2, "extensions");
  if (r.left !== 0) throw new Malformed("bytes after the ClientHello's extensions");
  return findServerName(exts);
}

function findServerName(exts: Reader): string | null {
  const seen = new Set<number>();
  let name: string | null = null;
  while (exts.left > 0) {
    const type = exts.u16("extension");
    const data = exts.vector(2, "extension");
    // RFC 8446 4.2: a repeated extension is an error; two server names could be read two ways.
    if (seen.has(type)) throw new Malformed(`extension ${type} appears twice in the ClientHello`);
    seen.add(type);
    if (type === EXT_SERVER_NAME) name = hostName(data);
  }
  return name;
}

/** RFC 6066 3: a ServerNameList with at most one host_name, an ASCII DNS name. */
function hostName(data: Reader): string | null {
  const list = data.vector(2, "server name list");
  if (data.left !== 0) throw new Malformed("bytes after the server name list");
  let host: string | null = null;
  while (list.left > 0) {
    const type = list.u8("server name");
    const name = list.vector(2, "server name");
    if (type !== NAME_HOST) continue;
    if (host !== null) throw new Malformed("two host names in the ClientHello's server_name");
    host = dnsName(name.bytes(name.left, "server name"));
  }
  return host;
}

function dnsName(bytes: Uint8Array): string {
  if (bytes.length === 0 || bytes.length > 253) throw new Malformed(`a server name of ${bytes.length} bytes`);
  for (const b of bytes) if (!isNameByte(b)) throw new Malformed("a server name with a byte that is not a letter, digit, '-', '_' or '.'");
  return String.fromCharCode(...bytes).toLowerCase();
}

function isNameByte(b: number): boolean {
  return (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2e || b === 0x5f;
}
