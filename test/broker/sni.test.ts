/**
 * The ClientHello reader, fed what real clients send: a loopback listener (Bun.listen) records
 * the first bytes curl, openssl s_client, node's tls.connect and Bun's fetch send, with a name
 * and without one, and a large hello spread over many small records. Each capture is also fed
 * cut at every byte (a hello arriving in TCP pieces), re-split into other record sizes, mutated
 * and truncated at random; hand-made hostile hellos (two names, a name with a NUL, an oversized
 * length) and plain HTTP are refused, and nothing ever throws.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { clientHello, MAX_BYTES, MAX_HELLO, MAX_RECORDS } from "../../src/broker/sni";

/** Independent of the code under test: the bytes of the first handshake message's records. */
function helloLength(buf: Uint8Array): number | undefined {
  let have = 0;
  let want = Number.POSITIVE_INFINITY;
  const hs: number[] = [];
  for (let at = 0; at + 5 <= buf.length; ) {
    const len = ((buf[at + 3] ?? 0) << 8) | (buf[at + 4] ?? 0);
    if (at + 5 + len > buf.length) return undefined;
    hs.push(...buf.subarray(at + 5, at + 5 + len));
    have += len;
    at += 5 + len;
    if (hs.length >= 4) want = 4 + (((hs[1] ?? 0) << 16) | ((hs[2] ?? 0) << 8) | (hs[3] ?? 0));
    if (have >= want) return at;
  }
  return undefined;
}

type Capture = { bytes: Uint8Array; done: boolean };
let listener: Bun.TCPSocketListener<Capture>;
const waiting: ((c: Uint8Array) => void)[] = [];

beforeAll(() => {
  listener = Bun.listen<Capture>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { bytes: new Uint8Array(0), done: false };
      },
      data(s, chunk) {
        const c = s.data;
        if (c.done) return;
        const next = new Uint8Array(c.bytes.length + chunk.length);
        next.set(c.bytes);
        next.set(chunk, c.bytes.length);
        c.bytes = next;
        const n = helloLength(next);
        const plain = next[0] !== 22 && next.includes(10);
        if (n === undefined && !plain) return;
        c.done = true;
        waiting.shift()?.(n === undefined ? next : next.subarray(0, n));
        s.end();
      },
    },
  });
});

afterAll(() => listener?.stop(true));

/** The first bytes a client sends to the listener (one client at a time). */
async function capture(start: (port: number) => unknown): Promise<Uint8Array> {
  const got = new Promise<Uint8Array>((resolve) => waiting.push(resolve));
  const client = start(listener.port);
  const bytes = await got;
  if (client instanceof Promise) await client.catch(() => {});
  if (client && typeof client === "object" && "exited" in client) await (client as { exited: Promise<number> }).exited;
  return bytes;
}

function spawn(argv: string[]) {
  return Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
}

const LONG = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(54)}.x.test`; // 253 characters
const ALPN = Array.from({ length: 20 }, (_, i) => `p${i}`.padEnd(200, "x")).join(",");

type Case = { name: string; sni: string | null; start: (port: number) => unknown };
const cases: Case[] = [
  {
    name: "curl with a name",
    sni: "git.lazy.test",
    start: (p) => spawn(["curl", "-s", "--noproxy", "*", "--resolve", `git.lazy.test:${p}:127.0.0.1`, `https://git.lazy.test:${p}/`]),
  },
  { name: "curl to an address (no SNI)", sni: null, start: (p) => spawn(["curl", "-s", "--noproxy", "*", `https://127.0.0.1:${p}/`]) },
  {
    name: "curl with a 253-character name",
    sni: LONG,
    start: (p) => spawn(["curl", "-s", "--noproxy", "*", "--resolve", `${LONG}:${p}:127.0.0.1`, `https://${LONG}:${p}/`]),
  },
  {
    name: "openssl s_client -servername (mixed case)",
    sni: "npm.corp.test",
    start: (p) => spawn(["openssl", "s_client", "-connect", `127.0.0.1:${p}`, "-servername", "NPM.Corp.Test"]),
  },
  {
    name: "openssl s_client -noservername",
    sni: null,
    start: (p) => spawn(["openssl", "s_client", "-connect", `127.0.0.1:${p}`, "-noservername"]),
  },
  {
    name: "openssl s_client, every cipher, a long ALPN list, 512-byte records",
    sni: "big.x.test",
    start: (p) =>
      spawn([
        "openssl",
        "s_client",
        "-connect",
        `127.0.0.1:${p}`,
        "-servername",
        "big.x.test",
        "-cipher",
        "ALL",
        "-max_send_frag",
        "512",
        "-alpn",
        ALPN,
      ]),
  },
  {
    name: "node tls.connect",
    sni: "node.x.test",
    start: (p) =>
      spawn(["node", "-e", `require("tls").connect({ host: "127.0.0.1", port: ${p}, servername: "node.x.test" }).on("error", () => {})`]),
  },
  {
    name: "Bun fetch with a name",
    sni: "pkgs.x.test",
    start: (p) => fetch(`https://127.0.0.1:${p}/`, { tls: { serverName: "pkgs.x.test" } }),
  },
  { name: "Bun fetch to an address", sni: null, start: (p) => fetch(`https://127.0.0.1:${p}/`) },
];

const captured = new Map<string, Uint8Array>();

describe("real ClientHellos", () => {
  for (const c of cases)
    test(c.name, async () => {
      const bytes = await capture(c.start);
      captured.set(c.name, bytes);
      expect(bytes[0]).toBe(22);
      expect(clientHello(bytes)).toEqual({ sni: c.sni });
      // Bytes after the hello (TLS 1.3 early data, a pipelined record) change nothing.
      const more = new Uint8Array(bytes.length + 3);
      more.set(bytes);
      more.set([23, 3, 3], bytes.length);
      expect(clientHello(more)).toEqual({ sni: c.sni });
    });

  test("the large one really spans many records and is large", () => {
    const big = captured.get(cases[5]?.name ?? "");
    expect(big).toBeDefined();
    expect(big?.length).toBeGreaterThan(4000);
    expect(records(big ?? new Uint8Array(0)).length).toBeGreaterThan(8);
  });

  test("every capture cut at every byte is `need` until its last byte", () => {
    expect(captured.size).toBe(cases.length);
    for (const [name, bytes] of captured) {
      const want = clientHello(bytes);
      for (let i = 0; i < bytes.length; i++) {
        const r = clientHello(bytes.subarray(0, i));
        if (!("need" in r)) throw new Error(`${name}: cut at ${i} of ${bytes.length} gave ${JSON.stringify(r)}`);
      }
      expect(clientHello(bytes)).toEqual(want);
    }
  });

  test("re-split into records of other sizes, the same name; past the record bound, refused", () => {
    for (const [name, bytes] of captured) {
      const message = records(bytes).reduce((a, r) => concat(a, r), new Uint8Array(0));
      const want = clientHello(bytes);
      for (const size of [1, 3, 64, 300, 16_384]) {
        const split = reRecord(message, size);
        const n = Math.ceil(message.length / size);
        const r = clientHello(split);
        if (n <= MAX_RECORDS) expect({ name, size, r }).toEqual({ name, size, r: want });
        else
          expect({ name, size, r }).toEqual({ name, size, r: { bad: `a ClientHello spread over more than ${MAX_RECORDS} TLS records` } });
      }
    }
  });

  test("mutated at random, truncated, or random bytes: an answer, never a throw", () => {
    const rand = prng(36);
    let answers = 0;
    for (const bytes of captured.values()) {
      for (let k = 0; k < 400; k++) {
        const m = bytes.slice(0, 1 + Math.floor(rand() * bytes.length));
        for (let f = 0; f < 1 + Math.floor(rand() * 4); f++) m[Math.floor(rand() * m.length)] = Math.floor(rand() * 256);
        answers += shape(clientHello(m));
      }
    }
    for (let k = 0; k < 2000; k++) {
      const m = new Uint8Array(Math.floor(rand() * 600)).map(() => Math.floor(rand() * 256));
      if (k % 2) m[0] = 22; // get past the first byte
      if (k % 4 === 1) m[1] = 3;
      answers += shape(clientHello(m));
    }
    expect(answers).toBe(captured.size * 400 + 2000);
  });
});

describe("what is not a ClientHello", () => {
  test("plain HTTP from curl is refused on its first byte", async () => {
    const bytes = await capture((p) => spawn(["curl", "-s", "--noproxy", "*", `http://127.0.0.1:${p}/`]));
    expect(new TextDecoder().decode(bytes.subarray(0, 14))).toBe("GET / HTTP/1.1");
    expect(clientHello(bytes)).toEqual({ bad: "not TLS (the first byte is not a TLS handshake record)" });
    expect(clientHello(bytes.subarray(0, 1))).toEqual({ bad: "not TLS (the first byte is not a TLS handshake record)" });
  });

  test("an oversized record or hello is refused from its header, before the rest is read", () => {
    expect(clientHello(Uint8Array.of(22, 3, 1, 0x40, 0x01))).toEqual({ bad: `a TLS record of 16385 bytes (the limit is ${MAX_HELLO})` });
    expect(clientHello(Uint8Array.of(22, 3, 1, 0x40, 0x00, 1, 0x00, 0x40, 0x01))).toEqual({
      bad: `a ClientHello of 16385 bytes (the limit is ${MAX_HELLO})`,
    });
    expect(clientHello(Uint8Array.of(22, 3, 1, 0x40, 0x00, 1, 0x00, 0x40, 0x00))).toEqual({ need: true });
  });

  test("a real client's hello over the bound (a huge ALPN list) is refused before all of it came", async () => {
    const huge = Array.from({ length: 90 }, (_, i) => `p${i}`.padEnd(200, "x")).join(",");
    const first = await capture((p) =>
      spawn(["openssl", "s_client", "-connect", `127.0.0.1:${p}`, "-servername", "a.test", "-alpn", huge]),
    );
    // The listener took the whole hello to measure it; the reader decides from the first record.
    expect(first.length).toBeGreaterThan(MAX_HELLO);
    expect(records(first).length).toBe(2);
    expect(clientHello(first.subarray(0, 9))).toEqual({ bad: expect.stringContaining(`(the limit is ${MAX_HELLO})`) });
  });

  test("the longest wait for more bytes stays within MAX_BYTES", () => {
    // The longest `need`: 64 records of 5-byte headers carrying a maximal hello, one byte short.
    const message = concat(Uint8Array.of(1, 0, 0x40, 0), new Uint8Array(MAX_HELLO));
    const split = reRecord(message, Math.ceil(message.length / MAX_RECORDS));
    expect(split.length).toBeLessThanOrEqual(MAX_BYTES);
    expect(clientHello(split.subarray(0, split.length - 1))).toEqual({ need: true });
    expect("need" in clientHello(split)).toBe(false);
  });

  const host = (name: string) => concat(Uint8Array.of(0), vec2(new TextEncoder().encode(name)));
  const sni = (...names: Uint8Array[]) => ext(0, vec2(concat(...names)));
  const cases: [string, Uint8Array, ReturnType<typeof clientHello>][] = [
    ["a well-formed hand-made hello", hello([sni(host("Git.Lazy.Test"))]), { sni: "git.lazy.test" }],
    ["no extensions at all", hello(undefined), { sni: null }],
    ["no server_name", hello([ext(16, vec2(Uint8Array.of(2, 104, 50)))]), { sni: null }],
    [
      "two server_name extensions",
      hello([sni(host("a.test")), sni(host("b.test"))]),
      { bad: "extension 0 appears twice in the ClientHello" },
    ],
    ["two host names", hello([sni(host("a.test"), host("b.test"))]), { bad: "two host names in the ClientHello's server_name" }],
    ["a name with a NUL", hello([sni(host("a.test\u0000.evil"))]), { bad: expect.stringContaining("not a letter") }],
    ["a name with a space", hello([sni(host("a test"))]), { bad: expect.stringContaining("not a letter") }],
    ["an empty name", hello([sni(host(""))]), { bad: "a server name of 0 bytes" }],
    [
      "a list length past its extension",
      hello([ext(0, Uint8Array.of(0, 50, 0, 0, 1, 97))]),
      { bad: "the ClientHello is cut short in its server name list" },
    ],
    [
      "an extension length past the hello",
      hello([Uint8Array.of(0, 0, 0x7f, 0xff)]),
      { bad: "the ClientHello is cut short in its extension" },
    ],
    ["a 33-byte session id", hello([], new Uint8Array(33)), { bad: "a ClientHello session id longer than 32 bytes" }],
    ["an alert record after the first", withSecondRecord(21), { bad: "a TLS record of type 21 inside the ClientHello" }],
    ["a ServerHello", retype(hello([sni(host("a.test"))]), 2), { bad: "a TLS handshake of type 2, not a ClientHello" }],
    ["SSLv2", Uint8Array.of(0x80, 0x2e, 1, 0, 2), { bad: "not TLS (the first byte is not a TLS handshake record)" }],
    ["an empty record", Uint8Array.of(22, 3, 1, 0, 0), { bad: "an empty TLS handshake record" }],
  ];
  for (const [name, bytes, want] of cases)
    test(`hand-made: ${name}`, () => {
      expect(clientHello(bytes)).toEqual(want);
    });
});

// ---- helpers: building and re-splitting TLS records ----

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function vec2(b: Uint8Array): Uint8Array {
  return concat(Uint8Array.of(b.length >> 8, b.length & 0xff), b);
}

function ext(type: number, data: Uint8Array): Uint8Array {
  return concat(Uint8Array.of(type >> 8, type & 0xff), vec2(data));
}

/** A ClientHello in one record; `exts` undefined leaves the extensions block out. */
function hello(exts: Uint8Array[] | undefined, session = new Uint8Array(0)): Uint8Array {
  const body = concat(
    Uint8Array.of(3, 3),
    new Uint8Array(32),
    Uint8Array.of(session.length),
    session,
    vec2(Uint8Array.of(0x13, 0x01)),
    Uint8Array.of(1, 0),
    exts ? vec2(concat(...exts)) : new Uint8Array(0),
  );
  const message = concat(Uint8Array.of(1, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff), body);
  return reRecord(message, 16_384);
}

function reRecord(message: Uint8Array, size: number): Uint8Array {
  const out: Uint8Array[] = [];
  for (let at = 0; at < message.length; at += size) {
    const part = message.subarray(at, at + size);
    out.push(Uint8Array.of(22, 3, 1, part.length >> 8, part.length & 0xff), part);
  }
  return concat(...out);
}

function records(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at + 5 <= bytes.length; ) {
    const len = ((bytes[at + 3] ?? 0) << 8) | (bytes[at + 4] ?? 0);
    out.push(bytes.subarray(at + 5, at + 5 + len));
    at += 5 + len;
  }
  return out;
}

function withSecondRecord(type: number): Uint8Array {
  const whole = hello([]);
  const message = whole.subarray(5);
  const split = reRecord(message, 10);
  split[15] = type;
  return split;
}

function retype(bytes: Uint8Array, type: number): Uint8Array {
  const out = bytes.slice();
  out[5] = type;
  return out;
}

function shape(r: ReturnType<typeof clientHello>): number {
  const ok =
    ("need" in r && r.need === true) ||
    ("sni" in r && (r.sni === null || /^[a-z0-9._-]{1,253}$/.test(r.sni))) ||
    ("bad" in r && r.bad.length > 0);
  return ok ? 1 : 0;
}

function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
