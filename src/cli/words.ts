/**
 * The CLI's voice for a refusal the core made as data (util/errors.ts `Facts`): the API's words
 * (daemon/words.ts), and what only this shell knows. A credential "not stored" while this shell
 * exports its variable: the daemon (started from another shell, or before the export) does not
 * have it; say exactly that, and the two fixes (the value itself is never read beyond its
 * presence). cli/index.ts installs this voice; a refusal from the daemon is worded again in it
 * as it arrives (client.ts).
 */
import { STANDARD } from "../credentials";
import { Words } from "../daemon";
import { type ErrorCode, type Facts, LazyError } from "../util/errors";

function words(facts: Facts): string {
  const said = Words.words(facts, words);
  if (facts.reason !== "credential_not_stored") return said;
  const variable = STANDARD[facts.credential];
  if (!variable || !process.env[variable]) return said;
  return `${said.replace(/\.$/, "")}. This shell exports ${variable}, but the running daemon was started without it: run lazy daemon restart from this shell, or store it with lazy auth set ${facts.credential}.`;
}

/** The CLI's voice (util/errors.ts `Voice`). */
export const cli = (_code: ErrorCode, facts: Facts): string => words(facts);

/**
 * A refusal from the daemon, worded in the CLI's voice when it came as data. A daemon of another
 * version may send a reason (or a preflight finding's kind) this CLI has no words for: then the
 * daemon's own words stand, rather than the CLI failing on a table it does not have.
 */
export function inOurWords(e: LazyError): LazyError {
  if (!e.facts) return e;
  let said: string;
  try {
    said = words(e.facts);
  } catch {
    return e;
  }
  return new LazyError(e.code, said, e.details, e.facts);
}
