/**
 * The macOS login Keychain through `/usr/bin/security`, the one file that runs it.
 *
 * Why the CLI and not Bun.secrets: an item `security` creates trusts `/usr/bin/security`, which
 * Apple signs and which never changes, so a new lazy binary (new ad-hoc signature) reads its
 * credentials without a Keychain prompt, and a user can change one with `security` too.
 *
 * The secret never goes in argv (`ps` shows argv to every user). `add-generic-password -w`
 * read from stdin truncates silently to 128 bytes, so the write is one `security -i` command
 * line on stdin with the value hex-encoded (`-X`). `security -i` reads a line into a 4096-byte
 * buffer: a longer line runs its first half and echoes the rest (the secret, in hex) as an
 * "unknown command" on stderr, so the line is bounded and stderr is scrubbed. Each write is
 * read back and compared, because `security -i` reports the status of its last command only.
 */
import { existsSync } from "node:fs";
import { scrub } from "./backend";
import type { SecretApi } from "./os-store";

export const SECURITY = "/usr/bin/security";
const TIMEOUT_MS = 10_000;
/** Bytes of one `security -i` line, newline included, kept well inside its 4096-byte buffer. */
const MAX_LINE = 4000;

const ERR_NOT_FOUND = 44; // errSecItemNotFound
const ERR_LOCKED = 36; // errSecInteractionNotAllowed: the keychain is locked

export function available(): string | undefined {
  if (process.platform !== "darwin") return "the macOS Keychain exists only on macOS";
  if (!existsSync(SECURITY)) return `${SECURITY} is missing`;
  return undefined;
}

/**
 * The stdin line that stores a value. Service and name are checked plain words (`security -i`
 * splits on whitespace and treats quotes), the value is hex, so nothing needs quoting.
 */
export function addLine(service: string, name: string, value: string): string {
  const hex = Buffer.from(value, "utf8").toString("hex");
  return `add-generic-password -U -s ${service} -a ${name} -X ${hex}\n`;
}

/** The longest value (in bytes) `addLine` can carry for this service and name. */
export function maxValueBytes(service: string, name: string): number {
  return Math.floor((MAX_LINE - addLine(service, name, "").length) / 2);
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function run(args: string[], stdin?: string): Promise<Ran> {
  const child = Bun.spawn([SECURITY, ...args], {
    stdin: stdin === undefined ? "ignore" : Buffer.from(stdin, "utf8"),
    stdout: "pipe",
    stderr: "pipe",
    timeout: TIMEOUT_MS,
  });
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  await child.exited;
  return { code: child.signalCode ? null : child.exitCode, stdout, stderr };
}

function why(r: Ran, value?: string): string {
  if (r.code === null) return `security did not answer within ${TIMEOUT_MS / 1000} s (a Keychain prompt waiting?)`;
  if (r.code === ERR_LOCKED) return "the login keychain is locked";
  let text = r.stderr.trim() || `security exited ${r.code}`;
  if (value) {
    text = scrub(text, value);
    const hex = Buffer.from(value, "utf8").toString("hex");
    text = scrub(scrub(text, hex), hex.toUpperCase());
  }
  return text.slice(0, 300);
}

export function api(service: string): SecretApi {
  const find = async (name: string): Promise<string | null> => {
    const r = await run(["find-generic-password", "-s", service, "-a", name, "-w"]);
    if (r.code === ERR_NOT_FOUND) return null;
    if (r.code !== 0) throw new Error(why(r));
    // -w prints the password and a newline; values lazy stores are printable ASCII, so the
    // hex form macOS 26 uses for binary data never applies to them.
    return r.stdout.endsWith("\n") ? r.stdout.slice(0, -1) : r.stdout;
  };
  return {
    kind: "keychain",
    label: "the macOS Keychain",
    remedy: "unlock the login keychain (security unlock-keychain), or set LAZY_CREDENTIAL_BACKEND=file",
    // Each read is a process, polled every few seconds for the daemon's lifetime: only names
    // lazy stored are read. A standard name created with `security` alone is not discovered.
    get: (name, indexed) => (indexed ? find(name) : Promise.resolve(null)),
    async set(name, value) {
      const max = maxValueBytes(service, name);
      if (Buffer.byteLength(value, "utf8") > max) {
        throw new Error(`the value is longer than the ${max} bytes one security -i line can carry`);
      }
      const r = await run(["-i"], addLine(service, name, value));
      if (r.code !== 0) throw new Error(why(r, value));
      if ((await find(name)) !== value) throw new Error(`the Keychain did not keep it (${why(r, value)})`);
    },
    async delete(name) {
      const r = await run(["delete-generic-password", "-s", service, "-a", name]);
      if (r.code === ERR_NOT_FOUND) return false;
      if (r.code !== 0) throw new Error(why(r));
      return true;
    },
  };
}
