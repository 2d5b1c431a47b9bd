/**
 * The API's voice: the words of a refusal the core made as data (util/errors.ts `Facts`), each
 * naming its cause and its remedy. The daemon speaks with it (daemon.ts installs it, so a
 * refusal's message in the log or on a task is these words) and the API answers with it
 * (api.ts). The CLI's voice (cli/words.ts) starts from these and adds what only a shell knows.
 */
import type { Checked, Finding, Found } from "../preflight";
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
  preflight: (f) => {
    const w = finding(f.found as Found);
    return `${sentence(w.summary)}${w.remedy ? ` ${sentence(w.remedy)}` : ""}`;
  },
};

type Kind = Found["kind"];
type Said = { summary: string; remedy?: string };

/** What a preflight check found, in words: lazy doctor's line and, when it blocks, the launch's refusal. */
const FOUND: { [K in Kind]: (f: Extract<Found, { kind: K }>) => Said } = {
  git_ok: (f) => ({ summary: `${f.root} is a git repository at ${f.head}` }),
  git_not_repo: (f) => ({
    summary: `${f.root} is not a git repository: each task works on a git worktree of the project`,
    remedy: `run git init && git add -A && git commit -m init in ${f.root} (or cd into your repository), then launch again`,
  }),
  git_no_commit: (f) => ({
    summary: `the git repository at ${f.root} has no commit yet: a task's worktree starts from HEAD`,
    remedy: "commit something first (git add -A && git commit -m init), then launch again",
  }),
  engine_same: (f) => ({ summary: `the daemon uses the same engine as this shell (${f.host})` }),
  engine_other: (f) => ({
    summary: `this shell names the Docker engine ${f.shell} (${f.shellSource}), but the running daemon uses ${f.daemon} (${f.daemonSource}): tasks would run on the daemon's engine, not this shell's`,
    remedy:
      "run lazy daemon restart from this shell (the daemon takes this shell's DOCKER_HOST or Docker context), or point this shell at the daemon's engine",
  }),
  refused: (f) => (f.remedy ? { summary: f.said.replace(/\.$/, ""), remedy: f.remedy } : { summary: f.said }),
  engine_down: (f) => ({
    summary: `the Docker engine at ${f.host} (${f.source}) does not answer: ${f.error}`,
    remedy:
      f.source === "DOCKER_HOST"
        ? "start that engine or fix DOCKER_HOST (or unset it to use this machine's engine); lazy doctor shows more"
        : "start Docker (Linux: sudo systemctl start docker, or dockerd), or point DOCKER_HOST at a running engine",
  }),
  image_stale: (f) => ({
    summary: `${f.tag} was built from other files than ${f.what} copies now: the next launch builds it again, then checks its harness`,
  }),
  image_absent: (f) => ({
    summary: `[container] image = "${f.tag}" is not on the Docker engine at ${f.host}: the first launch pulls it`,
    remedy: `docker pull ${f.tag} now, to see whether it can be pulled`,
  }),
  image_pulled: (f) => ({ summary: `pulled ${f.tag} ([container] image)` }),
  image_unbuilt: (f) => ({ summary: `${f.tag} is not built yet: the first launch builds ${f.what}, then checks its harness` }),
  image_present: (f) => ({ summary: `${f.tag} is on the engine at ${f.host}` }),
  image_missing: (f) => ({
    summary: `the image "${f.tag}" that [container] image names is not on the Docker engine at ${f.host} and could not be pulled (${f.error})`,
    remedy:
      "check the name for a typo (docker images lists what this engine has) and fix [container] image in lazy.toml, then lazy trust; or docker login / docker pull it; or remove the key to use lazy's default image",
  }),
  harness_runs: (f) => ({ summary: `${f.bin} runs in ${f.tag}: ${f.version}` }),
  harness_missing: (f) => {
    const fix =
      f.source === "image"
        ? `use an image with ${f.bin} on its PATH (lazy's default image has it: remove [container] image)`
        : f.source === "dockerfile"
          ? `install ${f.bin} in the image [container] dockerfile builds (or build FROM lazy's default image)`
          : `build lazy's default image again (lazy prune removes the broken one)`;
    const how = f.ran ? f.why.replace(/^it /, "") : `could not start (${f.why})`;
    return {
      summary: `the ${f.harness} harness does not run in the image ${f.tag}: ${f.bin} --version ${how}${f.output ? `; it printed: ${f.output}` : ""}`,
      remedy: `${fix}; or pick a profile of another harness (--profile)`,
    };
  },
};

/** A preflight finding in words. */
export function finding(f: Found): Said {
  return (FOUND[f.kind] as (f: Found) => Said)(f);
}

/** A preflight check as lazy doctor's line. */
export function shownFinding(c: Checked): Finding {
  return { check: c.check, ok: c.ok, blocking: c.blocking, ...finding(c.found), ...(c.details ? { details: c.details } : {}) };
}

/** A refusal's words from its facts; `say` words what it nests (another voice passes its own). */
export function words(facts: Facts, say: (f: Facts) => string = words): string {
  return (WORDS[facts.reason] as (f: Facts, say: (f: Facts) => string) => string)(facts, (f) => say(f));
}

/** The API's voice (util/errors.ts `Voice`): the code is in the answer beside the words. */
export const api = (_code: ErrorCode, facts: Facts): string => words(facts);
