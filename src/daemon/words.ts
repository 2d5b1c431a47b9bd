/**
 * The API's voice: the words of a refusal the core made as data (util/errors.ts `Facts`), each
 * naming its cause and its remedy. The daemon speaks with it (daemon.ts installs it, so a
 * refusal's message in the log or on a task is these words) and the API answers with it
 * (api.ts). The CLI's voice (cli/words.ts) starts from these and adds what only a shell knows.
 */
import type { ErrorCode, Facts } from "../util/errors";

type Reason = Facts["reason"];
type Of<R extends Reason> = Extract<Facts, { reason: R }>;

/** A sentence from a clause: a capital first, a full stop last. */
const sentence = (t: string) => `${t.charAt(0).toUpperCase()}${t.slice(1)}${/[.!?]$/.test(t) ? "" : "."}`;

/** `say`: how a nested refusal (a group's missing credentials) is worded, in the caller's voice. */
const WORDS: { [R in Reason]: (f: Of<R>, say: (f: Facts) => string) => string } = {
  credential_unmapped: (f) => `Profile ${f.profile} has no credential mapped for ${f.provider}: ${f.why}.`,
  credential_not_stored: (f) =>
    `Profile ${f.profile} needs the "${f.credential}" credential, which is not stored: run lazy auth set ${f.credential}.`,
  group_credentials: (f, say) =>
    `${f.missing.map(say).join(" ")} No candidate was made or started: the group needs every profile's credential.`,
  trust_record_foreign: (f) =>
    `${f.record} (what you trusted with lazy trust) is ${f.how}, so lazy trusts nothing it says: another user may have written it. Remove it (rm ${f.record}), then run lazy trust again where you trust the lazy.toml.`,
  trust_record_unreadable: (f) => `lazy's trust record does not read: ${f.error}.`,
  config_not_trusted: (f) =>
    `${f.file} is ${f.changed ? "changed" : "new"} and not trusted: it sets keys that decide where your credentials go or what runs, and lazy uses them only once you approve them. Look at the file, then run lazy trust in ${f.dir} (lazy trust --show lists what is trusted).`,
  dockerfile_changed: (f) =>
    `${f.dockerfile} (the Dockerfile [container] dockerfile names) changed since you trusted ${f.file}, and lazy builds only what you approved. Look at it, then run lazy trust in ${f.root}.`,
  build_files_changed: (f) =>
    `Files that go into the task image or its tasks changed${f.since ? ` since you trusted them (${f.since})` : ""}: ${f.changed.join(", ")}${f.more ? `, and ${f.more} more` : ""}. lazy builds and copies only what you approved with lazy trust. Look at them (git log -p -- PATH), then run lazy trust in ${f.root} (lazy trust --show lists what changed).`,
  proxy_not_ready: (f) =>
    f.what === "builder"
      ? "The model proxy is not available, so no builder session can start; run lazy doctor."
      : `The model proxy is not available, so ${f.what === "turn" ? "no turn can start" : "nothing can be launched"}; run lazy doctor for the finding and remedy.`,
  agent_cannot_read: (f) =>
    `lazy runs as root, so the agent runs as uid ${f.uid}, which cannot read ${f.dir} (mode ${f.mode}): the checkout was made under a umask that keeps others out; make it again with umask 022, or run lazy as the checkout's own user.`,
  container_vanished: (f) =>
    `The task's container vanished as it started; see lazy daemon logs, or docker ps -a --filter label=dev.lazy.task=${f.taskId}.`,
  setup_failed: (f) => `[container] setup failed with exit code ${f.exit}; see lazy logs ${f.task}.`,
  preflight: (f) => `${sentence(f.summary)}${f.remedy ? ` ${sentence(f.remedy)}` : ""}`,
};

/** A refusal's words from its facts; `say` words what it nests (another voice passes its own). */
export function words(facts: Facts, say: (f: Facts) => string = words): string {
  return (WORDS[facts.reason] as (f: Facts, say: (f: Facts) => string) => string)(facts, (f) => say(f));
}

/** The API's voice (util/errors.ts `Voice`): the code is in the answer beside the words. */
export const api = (_code: ErrorCode, facts: Facts): string => words(facts);
