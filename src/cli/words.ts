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

/** A refusal from the daemon, worded in the CLI's voice when it came as data. */
export function inOurWords(e: LazyError): LazyError {
  return e.facts ? new LazyError(e.code, words(e.facts), e.details, e.facts) : e;
}
