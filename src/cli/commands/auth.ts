import { type CredentialInfo, CredentialStore, fromClaudeJson, STANDARD, setWarnings } from "../../credentials";
import { LazyError } from "../../util/errors";
import { findProjectRoot, lazyHome } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson, table } from "../command";
import { suggest } from "../help";
import { err } from "../out";
import { say } from "../voice";

/**
 * Where credentials are set, listed and removed: the project's daemon (started when none runs),
 * so its proxy uses a new value at once. Credentials are not the project's (they live in lazy's
 * home): a lazy.toml nobody trusted, which keeps a daemon from starting, never keeps `lazy auth`
 * from working; then the store is used directly, and a daemon that starts later reads it.
 */
async function where(): Promise<{ daemon: Client.Client } | { store: CredentialStore }> {
  try {
    return { daemon: await Client.connect(findProjectRoot()) };
  } catch (e) {
    if (!(e instanceof LazyError && e.code === "config_untrusted")) throw e;
    return { store: await CredentialStore.open({ home: lazyHome() }) };
  }
}

/** Whether typed text is a PEM block begun and not yet ended. */
function pemOpen(buf: string): boolean {
  return buf.trimStart().startsWith("-----BEGIN ") && !/-----END [A-Z ]+-----\s*$/.test(buf);
}

/** The secret, from a hidden prompt on a terminal or from stdin when piped; never from argv. */
async function readSecret(name: string): Promise<string> {
  if (process.stdin.isTTY) {
    err(`Value for ${name} (input hidden): `);
    const value = await new Promise<string>((resolve, reject) => {
      let buf = "";
      process.stdin.setRawMode(true);
      process.stdin.resume();
      const done = (failure?: Error) => {
        process.stdin.setRawMode(false);
        process.stdin.pause();
        process.stdin.off("data", onData);
        err("\n");
        if (failure) reject(failure);
        else resolve(buf);
      };
      const onData = (chunk: Buffer) => {
        for (const ch of chunk.toString("utf8")) {
          // A pasted PEM private key (a GitHub App's) runs on to its END line.
          if ((ch === "\r" || ch === "\n") && pemOpen(buf)) {
            if (!buf.endsWith("\n")) buf += "\n";
            continue;
          }
          if (ch === "\r" || ch === "\n") return done();
          if (ch === "\u0003") return done(new LazyError("invalid_input", "Cancelled; nothing was stored."));
          if (ch === "\u007f" || ch === "\b") buf = buf.slice(0, -1);
          else buf += ch;
        }
      };
      process.stdin.on("data", onData);
    });
    return value.trim();
  }
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "")
    .trim();
}

const set = command({
  meta: {
    name: "auth set",
    description: "Store a credential (read from a hidden prompt, or stdin when piped; never from the command line)",
  },
  args: {
    name: {
      type: "positional",
      description: "anthropic, openai, openrouter, cursor, ollama, or a name of your own (work-openai)",
      required: true,
    },
    ...jsonArg,
  },
  async run({ args, rawArgs }) {
    const positional = rawArgs.filter((a) => !a.startsWith("-"));
    if (positional.length > 1)
      throw new LazyError(
        "invalid_input",
        "lazy auth set takes no secret on the command line (it would show in ps and your shell history): pipe it in, or type it at the prompt.",
      );
    const value = await readSecret(args.name);
    if (!value) throw new LazyError("invalid_input", `No value given for ${args.name}; nothing was stored.`);
    const to = await where();
    const info =
      "daemon" in to
        ? await to.daemon.request<CredentialInfo>("PUT", `/api/auth/${encodeURIComponent(args.name)}`, { value })
        : await to.store.set(args.name, value);
    // Claude Code's OAuth JSON: the daemon stores its access token (and its expiry).
    const token = fromClaudeJson(value)?.token ?? value;
    for (const w of setWarnings(args.name, token)) {
      const close = w.startsWith('"') ? suggest(args.name, Object.keys(STANDARD)) : [];
      say.warn(close.length ? `${w} Did you mean lazy auth set ${close[0]}?` : w);
    }
    if (args.json) printJson(info);
    else
      say.success(
        `Stored ${info.name} (${info.kind}${info.last4 ? `, …${info.last4}` : ""}) in the ${info.source} store.${info.expiresAt ? ` It expires at ${info.expiresAt}; lazy warns a day before.` : ""}`,
      );
  },
});

const list = command({
  meta: { name: "auth list", description: "List stored credentials: name, kind, backend, when set, last 4 characters" },
  args: jsonArg,
  async run({ args }) {
    const from = await where();
    const r =
      "daemon" in from
        ? await from.daemon.request<{
            backend: string;
            note: string;
            credentials: CredentialInfo[];
            problems: Record<string, string>;
            expiry?: { credential: string; message: string }[];
          }>("GET", "/api/auth")
        : {
            backend: from.store.backend,
            note: from.store.backendNote,
            credentials: from.store.list(),
            problems: {} as Record<string, string>,
            expiry: [],
          };
    if (args.json) return printJson(r);
    print(`Backend: ${r.backend} — ${r.note}`);
    if (!r.credentials.length) return print("No credentials yet: lazy auth set anthropic.");
    print(
      table([
        ["NAME", "KIND", "SOURCE", "SET", "LAST 4", "EXPIRES"],
        ...r.credentials.map((i) => [
          i.name,
          i.kind,
          i.source === "env" ? `env ${i.envVar}` : i.source,
          i.setAt ?? "-",
          i.last4 ? `…${i.last4}` : "-",
          i.expiresAt ?? "-",
        ]),
      ]),
    );
    for (const [name, p] of Object.entries(r.problems)) print(`! ${name}: ${p}`);
    for (const e of r.expiry ?? []) if (!r.problems[e.credential]) print(`! ${e.credential}: ${e.message}`);
  },
});

const rm = command({
  meta: { name: "auth rm", description: "Remove a stored credential" },
  args: { name: { type: "positional", description: "Credential name", required: true } },
  async run({ args }) {
    const from = await where();
    if ("daemon" in from) await from.daemon.request("DELETE", `/api/auth/${encodeURIComponent(args.name)}`);
    else if (!(await from.store.remove(args.name)))
      throw new LazyError("not_found", `No stored credential "${args.name}": see lazy auth list.`);
    say.success(`Removed ${args.name}.`);
  },
});

export const auth = command({
  meta: { name: "auth", description: "Manage the real credentials the proxy injects: set, list, rm" },
  subCommands: { set, list, rm },
});
