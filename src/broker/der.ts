/**
 * A minimal DER writer, just enough to build X.509 certificates: lazy makes its broker CA and
 * leaf certificates itself with node:crypto rather than shelling out to openssl (not on every
 * host) or taking a dependency. Every function returns the full TLV encoding of one value;
 * nesting is done by passing encodings to `seq`/`explicit`. The one reader, `children`, walks a
 * certificate lazy made itself (to copy the CA's subject into a leaf's issuer byte for byte).
 */

/** The length octets: short form below 128, else long form with the fewest bytes. */
function length(n: number): Uint8Array {
  if (n < 0x80) return Uint8Array.of(n);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

export function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** One TLV: tag byte, length, contents. */
export function tlv(tag: number, contents: Uint8Array): Uint8Array {
  return concat([Uint8Array.of(tag), length(contents.length), contents]);
}

export function seq(...items: Uint8Array[]): Uint8Array {
  return tlv(0x30, concat(items));
}

export function set(...items: Uint8Array[]): Uint8Array {
  return tlv(0x31, concat(items));
}

export function bool(v: boolean): Uint8Array {
  return tlv(0x01, Uint8Array.of(v ? 0xff : 0x00));
}

/**
 * An INTEGER from unsigned big-endian bytes (a serial number) or a small non-negative number:
 * leading zeros are dropped and one 0x00 is added when the top bit is set, so it stays positive.
 */
export function int(v: number | Uint8Array): Uint8Array {
  let bytes = typeof v === "number" ? smallInt(v) : v;
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  bytes = bytes.subarray(start);
  if (bytes.length === 0) bytes = Uint8Array.of(0);
  if ((bytes[0] ?? 0) & 0x80) bytes = concat([Uint8Array.of(0), bytes]);
  return tlv(0x02, bytes);
}

function smallInt(n: number): Uint8Array {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`der: ${n} is not a small non-negative integer`);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Uint8Array.from(bytes);
}

/** An OBJECT IDENTIFIER from its dotted form ("1.2.840.10045.2.1"). */
export function oid(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map(Number);
  const [a, b, ...rest] = arcs;
  if (a === undefined || b === undefined || arcs.some((n) => !Number.isSafeInteger(n) || n < 0))
    throw new RangeError(`der: bad OID ${dotted}`);
  const out: number[] = [...base128(a * 40 + b)];
  for (const n of rest) out.push(...base128(n));
  return tlv(0x06, Uint8Array.from(out));
}

function base128(n: number): number[] {
  const out = [n & 0x7f];
  for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) out.unshift(0x80 | (v & 0x7f));
  return out;
}

export function utf8(s: string): Uint8Array {
  return tlv(0x0c, new TextEncoder().encode(s));
}

export function printable(s: string): Uint8Array {
  if (!/^[A-Za-z0-9 '()+,\-./:=?]*$/.test(s)) throw new RangeError(`der: ${JSON.stringify(s)} is not a PrintableString`);
  return tlv(0x13, new TextEncoder().encode(s));
}

/** A BIT STRING of whole bytes (a public key, a signature). */
export function bits(bytes: Uint8Array): Uint8Array {
  return tlv(0x03, concat([Uint8Array.of(0), bytes]));
}

/**
 * A named-bit BIT STRING (keyUsage): bit 0 is the first bit of the first byte. DER drops
 * trailing zero bits and says how many unused bits the last byte has.
 */
export function namedBits(set: number[]): Uint8Array {
  if (set.length === 0) return tlv(0x03, Uint8Array.of(0));
  const top = Math.max(...set);
  const bytes = new Uint8Array(Math.floor(top / 8) + 1);
  for (const b of set) bytes[b >> 3] = (bytes[b >> 3] ?? 0) | (0x80 >> (b & 7));
  const unused = 7 - (top & 7);
  return tlv(0x03, concat([Uint8Array.of(unused), bytes]));
}

export function octets(bytes: Uint8Array): Uint8Array {
  return tlv(0x04, bytes);
}

/** RFC 5280: UTCTime through 2049, GeneralizedTime from 2050; both in UTC to the second. */
export function time(d: Date): Uint8Array {
  const iso = d.toISOString(); // 2025-01-02T03:04:05.678Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, ""); // 20250102030405
  const year = d.getUTCFullYear();
  if (year < 1950 || year > 9999) throw new RangeError(`der: year ${year} is out of range for a certificate`);
  if (year < 2050) return tlv(0x17, new TextEncoder().encode(`${digits.slice(2)}Z`));
  return tlv(0x18, new TextEncoder().encode(`${digits}Z`));
}

/** [n] EXPLICIT: a constructed context tag around one encoding. */
export function explicit(n: number, inner: Uint8Array): Uint8Array {
  return tlv(0xa0 | n, inner);
}

/** [n] IMPLICIT on a primitive value (a GeneralName's dNSName [2], iPAddress [7], keyIdentifier [0]). */
export function implicit(n: number, contents: Uint8Array): Uint8Array {
  return tlv(0x80 | n, contents);
}

/**
 * The TLVs inside one constructed value's contents, each as its full encoding. Throws a
 * RangeError on a truncated or malformed encoding (callers hold lazy's own certificates).
 */
export function children(der: Uint8Array): Uint8Array[] {
  const outer = readTlv(der, 0);
  const out: Uint8Array[] = [];
  for (let at = outer.start; at < outer.end; ) {
    const t = readTlv(der, at);
    if (t.end > outer.end) throw new RangeError("der: a value overruns its parent");
    out.push(der.subarray(at, t.end));
    at = t.end;
  }
  return out;
}

function readTlv(der: Uint8Array, at: number): { start: number; end: number } {
  const first = der[at + 1];
  if (der[at] === undefined || first === undefined) throw new RangeError("der: truncated");
  let start = at + 2;
  let len = first;
  if (first & 0x80) {
    const n = first & 0x7f;
    if (n === 0 || n > 4) throw new RangeError("der: unsupported length");
    len = 0;
    for (let i = 0; i < n; i++) {
      const b = der[start + i];
      if (b === undefined) throw new RangeError("der: truncated");
      len = len * 256 + b;
    }
    start += n;
  }
  if (start + len > der.length) throw new RangeError("der: truncated");
  return { start, end: start + len };
}
