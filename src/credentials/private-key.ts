/**
 * A private key through `lazy auth set` (a GitHub App's, for the broker). A PEM spans lines, but
 * every backend (a `security -i` line, `secret-tool`, the file store's reload) and the proxy's
 * header path take one printable word, and a pasted line break must never split a header. So a
 * PEM is proven to be a private key (node:crypto parses it), re-encoded as PKCS#8 DER in base64
 * behind a marker, one word, and stored that way; the broker turns it back into a key object.
 * Any other multi-line value stays refused.
 */
import { createPrivateKey, type KeyObject } from "node:crypto";

/** The most a PEM given to `lazy auth set` may be. */
export const PEM_MAX_BYTES = 16 * 1024;
/** How a stored private key begins (never a provider key's prefix, never a valid name). */
export const KEY_MARK = "lazy-private-key:pkcs8:";

const PEM = /^-----BEGIN (RSA )?PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n:,\- ]+?\r?\n-----END \1PRIVATE KEY-----$/;

/** What a value that spans lines may be, said in each refusal. */
export const PEM_RULE =
  "a PEM private key (-----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----, unencrypted, at most 16 KiB) is the one value that may span lines";

/** Whether `value` is meant as a PEM (so a refusal can speak of PEMs). */
export function looksLikePem(value: string): boolean {
  return value.trimStart().startsWith("-----BEGIN ");
}

/**
 * The key material a stored private key stands for, as it can appear in a text: its DER in
 * base64 without the marker, and each 64-character line of its PEM (a PEM's body is that base64,
 * wrapped), in PKCS#8 and, for an RSA key, PKCS#1 as it was likely given. What lazy cuts from
 * what it exports (lazy export) besides the stored value itself. None for any other value.
 */
export function keyMaterial(stored: string): string[] {
  if (!isStoredKey(stored)) return [];
  const out = new Set<string>();
  const pkcs8 = stored.slice(KEY_MARK.length);
  const add = (b64: string) => {
    out.add(b64);
    for (let i = 0; i < b64.length; i += 64) out.add(b64.slice(i, i + 64));
  };
  add(pkcs8);
  try {
    const key = createPrivateKey({ key: Buffer.from(pkcs8, "base64"), format: "der", type: "pkcs8" });
    if (key.asymmetricKeyType === "rsa") add((key.export({ format: "der", type: "pkcs1" }) as Buffer).toString("base64"));
  } catch {
    // Not a key node can read back: its base64 is all there is to cut.
  }
  return [...out];
}

/** Whether a stored value is a private key stored by `encodePem`. */
export function isStoredKey(value: string): boolean {
  return value.startsWith(KEY_MARK);
}

/**
 * The one-word stored form of a PEM private key, or the reason it is refused (never quoting the
 * value, nor node's parse error, which may).
 */
export function encodePem(given: string): { stored: string } | { refused: string } {
  const pem = given.trim();
  if (Buffer.byteLength(pem, "utf8") > PEM_MAX_BYTES) return { refused: `the PEM is longer than ${PEM_MAX_BYTES / 1024} KiB; ${PEM_RULE}` };
  if (!PEM.test(pem))
    return {
      refused: `it is not one PEM private key (an encrypted key, a certificate, a public key or several blocks are refused); ${PEM_RULE}`,
    };
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    return {
      refused:
        "it has PEM private key lines but node:crypto cannot read it as one (encrypted? decrypt it first: openssl pkey -in app.pem -out plain.pem)",
    };
  }
  const stored = KEY_MARK + key.export({ format: "der", type: "pkcs8" }).toString("base64");
  // The credential value bound (kinds.ts): an RSA key of up to 4096 bits fits well inside it.
  if (stored.length > 8192)
    return { refused: "the key is too large to store (more than 8192 characters as PKCS#8); use an RSA key of at most 4096 bits" };
  return { stored };
}

/** The key object a stored value (or a PEM given as it is) holds; throws a message free of the value. */
export function privateKeyOf(value: string): KeyObject {
  try {
    if (isStoredKey(value))
      return createPrivateKey({ key: Buffer.from(value.slice(KEY_MARK.length), "base64"), format: "der", type: "pkcs8" });
    return createPrivateKey({ key: value, format: "pem" });
  } catch {
    throw new Error("the stored value is not a private key");
  }
}
