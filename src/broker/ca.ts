/**
 * The broker's certificates. To swap a placeholder for a real token, the egress proxy must read
 * the request, so for brokered hosts it terminates TLS with a leaf certificate signed by a CA
 * that is the project's own: made once by the daemon, its key kept 0600 on the host and never
 * given to a container (only `ca.pem` is installed in task images). Built with node:crypto
 * alone (ECDSA P-256, ecdsa-with-SHA256) so no openssl or dependency is needed at run time.
 */
import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject, randomBytes, sign, X509Certificate } from "node:crypto";
import { statSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import { LazyError } from "../util/errors";
import { ensurePrivateDir, readOwn, writeFileAtomic } from "../util/files";
import { type Lock, tryLock } from "../util/flock";
import * as Log from "../util/log";
import * as Der from "./der";

const log = Log.create("broker");

const DAY_MS = 86_400_000;
/** A CA this close to its end is made anew, so a leaf never outlives its issuer. */
const CA_RENEW_MS = 60 * DAY_MS;
const CA_YEARS = 10;
const LOCK_WAIT_MS = 10_000;
/** Well under the 398 days clients enforce for server certificates. */
export const LEAF_DAYS = 30;

const OID = {
  ecPublicKey: "1.2.840.10045.2.1",
  ecdsaSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  subjectKeyId: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyId: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
} as const;

/** keyUsage bit numbers (RFC 5280 4.2.1.3). */
const KU = { digitalSignature: 0, keyCertSign: 5, cRLSign: 6 } as const;

export type Ca = { cert: string; key: string; hash: string };

/**
 * The project's CA in `dir` (ca.pem, ca-key.pem), made when missing and reused after. A pair
 * that cannot be trusted as lazy's own (another user's file, a key readable by others, a cert
 * that does not parse or does not match the key, one near its end) is made anew, and the log
 * says why: task images that installed the old certificate see a new `hash`.
 */
export function ensureCa(dir: string, now = new Date()): Ca & { made?: string } {
  ensurePrivateDir(dir);
  // The daemon and a CLI command may both get here first: one makes, the other reads its pair.
  const lock = lockSync(join(dir, "ca.lock"));
  try {
    return readOrMake(dir, now);
  } finally {
    lock.release();
  }
}

function readOrMake(dir: string, now: Date): Ca & { made?: string } {
  const certPath = join(dir, "ca.pem");
  const keyPath = join(dir, "ca-key.pem");
  const found = readCa(certPath, keyPath, now);
  if ("cert" in found) return found;
  if (found.why !== "missing") log.warn(`the broker CA in ${dir} is made anew: ${found.why}`);
  const made = makeCa(now);
  // The key first: a crash between the two leaves a cert that does not match, made anew next time.
  writeFileAtomic(keyPath, made.key, 0o600);
  writeFileAtomic(certPath, made.cert, 0o644);
  return { ...made, hash: pemHash(made.cert), made: found.why };
}

/** The lock, waited for synchronously: making a CA takes milliseconds. */
function lockSync(path: string): Lock {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    const l = tryLock(path);
    if (l) return l;
    if (Date.now() > deadline)
      throw new LazyError(
        "conflict",
        `another lazy process has held the lock ${path} for ${LOCK_WAIT_MS / 1000} s; stop the stuck lazy process and retry`,
      );
    Bun.sleepSync(5);
  }
}

function readCa(certPath: string, keyPath: string, now: Date): Ca | { why: string } {
  const cert = readOwn(certPath);
  const key = readOwn(keyPath);
  if (!cert && !key) return { why: "missing" };
  if (!cert || !key) return { why: `${cert ? "ca-key.pem" : "ca.pem"} is missing` };
  if ("foreign" in cert) return { why: `ca.pem is ${cert.foreign}` };
  if ("foreign" in key) return { why: `ca-key.pem is ${key.foreign}` };
  const mode = fileMode(keyPath);
  if (mode !== 0o600) return { why: `ca-key.pem has mode ${mode.toString(8)}, not 600` };
  try {
    const x = new X509Certificate(cert.text);
    if (!x.ca) return { why: "ca.pem is not a CA certificate" };
    if (!x.checkPrivateKey(createPrivateKey(key.text))) return { why: "ca.pem does not match ca-key.pem" };
    if (new Date(x.validTo).getTime() - now.getTime() < CA_RENEW_MS) return { why: `ca.pem ends on ${x.validTo}` };
  } catch (e) {
    return { why: `ca.pem or ca-key.pem does not parse (${(e as Error).message})` };
  }
  return { cert: cert.text, key: key.text, hash: pemHash(cert.text) };
}

function fileMode(path: string): number {
  return statSync(path).mode & 0o777;
}

function makeCa(now: Date): { cert: string; key: string } {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const subject = name(`lazy broker CA ${randomBytes(4).toString("hex")}`);
  const ski = keyId(publicKey);
  const notAfter = new Date(now);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + CA_YEARS);
  const tbs = tbsCertificate({
    issuer: subject,
    subject,
    publicKey,
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter,
    extensions: [
      extension(OID.basicConstraints, true, Der.seq(Der.bool(true), Der.int(0))),
      extension(OID.keyUsage, true, Der.namedBits([KU.keyCertSign, KU.cRLSign])),
      extension(OID.subjectKeyId, false, Der.octets(ski)),
    ],
  });
  return { cert: certificatePem(tbs, privateKey), key: pkcs8(privateKey) };
}

/**
 * A server certificate for every host pattern ("github.com", "*.githubusercontent.com",
 * "npm.corp:8443", "10.0.0.5", "[::1]:8443"), signed by `ca`, with a fresh key of its own.
 */
export function leaf(ca: { cert: string; key: string }, hosts: string[], now = new Date()): { cert: string; key: string; notAfter: Date } {
  const names = [...new Map(hosts.map((h) => sanOf(h)).map((s) => [s.key, s])).values()];
  const first = names[0];
  if (!first) throw new LazyError("invalid_input", "a broker certificate needs at least one host");
  const caX = new X509Certificate(ca.cert);
  const caKey = createPrivateKey(ca.key);
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const notAfter = new Date(now.getTime() + LEAF_DAYS * DAY_MS);
  const tbs = tbsCertificate({
    issuer: subjectOf(caX),
    // The CN is a courtesy (clients match the SANs); X.520 bounds it at 64 characters.
    subject: name(first.text.length <= 64 ? first.text : "lazy broker"),
    publicKey,
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter,
    extensions: [
      extension(OID.basicConstraints, true, Der.seq()),
      extension(OID.keyUsage, true, Der.namedBits([KU.digitalSignature])),
      extension(OID.extKeyUsage, false, Der.seq(Der.oid(OID.serverAuth))),
      extension(OID.subjectAltName, false, Der.seq(...names.map((n) => n.der))),
      extension(OID.subjectKeyId, false, Der.octets(keyId(publicKey))),
      extension(OID.authorityKeyId, false, Der.seq(Der.implicit(0, keyId(caX.publicKey)))),
    ],
  });
  return { cert: certificatePem(tbs, caKey), key: pkcs8(privateKey), notAfter };
}

/** sha256 of the CA's PEM, first 12 hex: names the CA in image tags and `lazy doctor`. */
export function pemHash(pem: string): string {
  return createHash("sha256").update(pem).digest("hex").slice(0, 12);
}

type Tbs = {
  issuer: Uint8Array;
  subject: Uint8Array;
  publicKey: KeyObject;
  notBefore: Date;
  notAfter: Date;
  extensions: Uint8Array[];
};

function tbsCertificate(t: Tbs): Uint8Array {
  return Der.seq(
    Der.explicit(0, Der.int(2)), // v3
    Der.int(serial()),
    sigAlg(),
    t.issuer,
    Der.seq(Der.time(t.notBefore), Der.time(t.notAfter)),
    t.subject,
    new Uint8Array(t.publicKey.export({ type: "spki", format: "der" })),
    Der.explicit(3, Der.seq(...t.extensions)),
  );
}

function certificatePem(tbs: Uint8Array, key: KeyObject): string {
  const signature = sign("sha256", tbs, key); // DER-encoded ECDSA-Sig-Value
  const der = Der.seq(tbs, sigAlg(), Der.bits(new Uint8Array(signature)));
  const b64 = Buffer.from(der).toString("base64");
  return `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)?.join("\n")}\n-----END CERTIFICATE-----\n`;
}

function pkcs8(key: KeyObject): string {
  return key.export({ type: "pkcs8", format: "pem" }).toString();
}

function sigAlg(): Uint8Array {
  return Der.seq(Der.oid(OID.ecdsaSha256));
}

/** 16 random bytes, top bit clear (positive) and second bit set (always 16 octets). */
function serial(): Uint8Array {
  const b = randomBytes(16);
  b[0] = ((b[0] ?? 0) & 0x7f) | 0x40;
  return b;
}

function name(cn: string): Uint8Array {
  const rdn = (type: string, value: string) => Der.set(Der.seq(Der.oid(type), Der.utf8(value)));
  return Der.seq(rdn(OID.organization, "lazy"), rdn(OID.commonName, cn));
}

function extension(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  return critical ? Der.seq(Der.oid(id), Der.bool(true), Der.octets(value)) : Der.seq(Der.oid(id), Der.octets(value));
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the public key's bits (the uncompressed EC point). */
function keyId(publicKey: KeyObject): Uint8Array {
  const jwk = publicKey.export({ format: "jwk" });
  if (!jwk.x || !jwk.y) throw new LazyError("internal", "the broker's key is not an EC key");
  const point = Buffer.concat([Buffer.of(4), Buffer.from(jwk.x, "base64url"), Buffer.from(jwk.y, "base64url")]);
  return new Uint8Array(createHash("sha1").update(point).digest());
}

/** The CA's subject as encoded in its certificate, so a leaf's issuer matches it byte for byte. */
function subjectOf(ca: X509Certificate): Uint8Array {
  const [tbs] = Der.children(new Uint8Array(ca.raw));
  if (!tbs) throw new LazyError("internal", "the broker CA certificate has no body");
  const fields = Der.children(tbs);
  // [0] version is present in every v3 certificate: version, serial, sigAlg, issuer, validity, subject.
  const subject = fields[fields[0]?.[0] === 0xa0 ? 5 : 4];
  if (!subject) throw new LazyError("internal", "the broker CA certificate has no subject");
  return subject;
}

type San = { key: string; text: string; der: Uint8Array };

/** One host pattern as a GeneralName: an IP literal as iPAddress [7], else dNSName [2]. */
function sanOf(pattern: string): San {
  const host = stripPort(pattern.trim());
  const ip = ipBytes(host);
  if (ip) return { key: `ip:${Buffer.from(ip).toString("hex")}`, text: host, der: Der.implicit(7, ip) };
  const dns = host.toLowerCase().replace(/\.$/, "");
  if (!validDns(dns))
    throw new LazyError("invalid_input", `"${pattern}" is not a host name, a *.wildcard or an IP address for a broker certificate`);
  return { key: `dns:${dns}`, text: dns, der: Der.implicit(2, new TextEncoder().encode(dns)) };
}

/** "host:443" → "host", "[::1]:8443" → "::1", "::1" stays (more than one colon: no port). */
export function stripPort(h: string): string {
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end > 0 ? h.slice(1, end) : h;
  }
  const colons = h.split(":").length - 1;
  return colons === 1 ? h.slice(0, h.indexOf(":")) : h;
}

function validDns(h: string): boolean {
  if (h.length === 0 || h.length > 253) return false;
  const labels = h.split(".");
  return labels.every((l, i) => (i === 0 && l === "*" && labels.length > 2) || /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(l));
}

/** An IPv4 or IPv6 literal as its 4 or 16 bytes; undefined for anything else. */
export function ipBytes(h: string): Uint8Array | undefined {
  const kind = isIP(h);
  if (kind === 4) return Uint8Array.from(h.split(".").map(Number));
  if (kind !== 6) return undefined;
  let text = h.replace(/%.*$/, "");
  // An embedded IPv4 tail ("::ffff:1.2.3.4") becomes two hex groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (v4) {
    const [a = 0, b = 0, c = 0, d = 0] = v4.split(".").map(Number);
    text = `${text.slice(0, -v4.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const groups = (s: string) => (s ? s.split(":") : []);
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    const v = Number.parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}
