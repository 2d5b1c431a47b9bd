/**
 * `secret-tool` (libsecret-tools), the one file that runs it: a schema-agnostic view of the
 * Secret Service items for one (service, account).
 *
 * Why it is needed beside Bun.secrets: Bun tags its items `xdg:schema=com.oven-sh.bun.Secret`
 * and only finds items carrying that tag. When another program replaces such an item (a user's
 * `secret-tool store service lazy account anthropic`), gnome-keyring sometimes drops the tag:
 * from then on Bun.secrets.get returns null for it, and the next Bun.secrets.set adds a second
 * item beside it. Looking up by (service, account) alone sees what the user sees.
 *
 * Values come back on stdout (a pipe); argv carries only the service and the name.
 */
const TIMEOUT_MS = 10_000;

export function available(): boolean {
  return Bun.which("secret-tool") !== null;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function run(args: string[]): Promise<Ran> {
  const child = Bun.spawn(["secret-tool", ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: TIMEOUT_MS });
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  await child.exited;
  return { code: child.signalCode ? null : child.exitCode, stdout, stderr };
}

function failure(what: string, r: Ran): Error {
  if (r.code === null) return new Error(`secret-tool ${what} did not answer within ${TIMEOUT_MS / 1000} s (a locked keyring?)`);
  return new Error(`secret-tool ${what} exited ${r.code}${r.stderr.trim() ? `: ${r.stderr.trim().slice(0, 200)}` : ""}`);
}

/** Remove every item for (service, account = name); true when there was one. */
export async function clear(service: string, name: string): Promise<boolean> {
  const r = await run(["clear", "service", service, "account", name]);
  if (r.code === 0) return true;
  if (r.code === 1 && !r.stderr.trim()) return false;
  throw failure("clear", r);
}

/**
 * The values of every item for (service, account = name), the most recently modified last.
 * secret-tool prints each item's attributes on stderr and the rest on stdout, so only a search
 * narrowed to one account can be read from stdout alone. A locked keyring lists its items
 * without their secrets, which is an error here, not an absence: `lookup` cannot tell the two
 * apart (exit 1 either way).
 */
export async function values(service: string, name: string): Promise<string[]> {
  const r = await run(["search", "--all", "service", service, "account", name]);
  if (r.code !== 0) throw failure("search", r);
  const items: Array<{ value: string; modified: string }> = [];
  for (const block of r.stdout.split(/^(?=\[\/)/m)) {
    if (!block.startsWith("[/")) continue;
    // The secret is printed raw and may span lines; `created` always follows it.
    const value = /^secret = ([\s\S]*?)\ncreated = /m.exec(block)?.[1];
    if (value === undefined) throw new Error("the keyring is locked (secret-tool lists the item without its secret)");
    items.push({ value, modified: /^modified = (.*)$/m.exec(block)?.[1] ?? "" });
  }
  return items.sort((a, b) => a.modified.localeCompare(b.modified)).map((i) => i.value);
}
