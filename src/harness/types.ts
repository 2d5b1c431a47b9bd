import type { ResolvedProfile } from "../config";

/** Everything a harness adapter needs to point its agent at the proxy. */
export interface Launch {
  /** How the agent reaches the proxy (loopback on the host; the gateway inside a container). */
  proxyUrl: string;
  /** The variable the harness reads its credential from, and the placeholder in it. */
  envVar: string;
  placeholder: string;
  profile: ResolvedProfile;
  /** A folder lazy owns for this harness's configuration, rewritten before every turn. */
  configDir: string;
  /** Headless: one turn with this prompt, JSON events on stdout. Absent: interactive. */
  prompt?: string;
  /**
   * Headless, but the prompt comes later on stdin (what `Harness.stdinPrompt` makes of it): the
   * harness starts now and waits. Only for a harness that has `stdinPrompt`.
   */
  promptOnStdin?: boolean;
  /**
   * One of lazy's own one-shot calls: the harness adds nothing of the project's state of its own
   * (Claude Code's git status snapshot, which a warm harness would have taken minutes before);
   * the prompt carries what the call needs.
   */
  oneShot?: boolean;
  /** Resume this harness session (the next turn of a task). */
  resume?: string;
  /** Extra arguments, passed through untouched (`lazy chat -- ARGS`). */
  args?: string[];
  /**
   * The working directory is this task worktree, which the agent wrote (lazy pair), or the
   * project's checkout, into which agents' branches are merged (lazy's own calls): the harness
   * starts with everything executable it would load from there (hooks, MCP servers, extensions,
   * project settings) turned off. Absent: the folder is the user's own (lazy chat).
   */
  untrustedCwd?: string;
  /** lazy's MCP route and this caller's token (task turns): the harness gets lazy's tools. */
  mcp?: { url: string; token: string };
}

export interface Prepared {
  /** argv[0] is the harness's binary name, looked up on PATH. */
  command: string[];
  /** Variables to set; every credential variable not listed here is removed. */
  env: Record<string, string>;
  /** Files to write under configDir (path relative to it), mode 0600. */
  files: Record<string, string>;
  /** With untrustedCwd: what the worktree carries that was not loaded, one entry per thing. */
  notLoaded?: string[];
}

/** What a worktree carries that a harness would load from its working directory. */
export interface Inspection {
  /** Turned off by the launch's flags or configuration: the user is told. */
  notLoaded: string[];
  /** The harness has no switch to skip these: the launch is refused, naming them. */
  refused: string[];
}

/** What the proxy knows of the real credential a placeholder stands for. */
export interface RealCredential {
  /** Sent as a bearer token (an OpenAI-style gateway behind an Anthropic-wire profile). */
  bearer: boolean;
  /** An OpenRouter key (the placeholder then looks like one). */
  openrouter: boolean;
  /** The stored credential's kind (api-key, oauth-token, …), or null when there is none. */
  kind: string | null;
}

/** Where a harness reads its credential, and what the value must look like to be accepted. */
export interface CredentialSlot {
  envVar: string;
  shape: "anthropic-api-key" | "anthropic-oauth" | "openai" | "openrouter" | "cursor" | "generic";
}

export interface Harness {
  readonly name: ResolvedProfile["harness"];
  /** The program a task container runs (its `--version` is the preflight's check: src/preflight). */
  readonly binary: string;
  /** The variable this harness reads its credential from, for this profile and credential. */
  slot(profile: ResolvedProfile, real: RealCredential): CredentialSlot;
  prepare(l: Launch): Prepared;
  /** What to write on the stdin of a harness started with `promptOnStdin`; absent: it takes its prompt only on its command line. */
  stdinPrompt?(prompt: string): string;
  /** Read (never follow, never run) what `worktree` carries for this harness. */
  inspect(worktree: string): Inspection;
  /** Where in its configuration folder the harness keeps session transcripts (a pair copies them). */
  readonly sessions: readonly string[];
  /**
   * Who `lazy accept` names in the merge's `Co-Authored-By` trailer ([provenance] trailers): the
   * identity the harness's own vendor writes on its commits where it has one, else lazy's words
   * for the harness. Fixed text, never the agent's.
   */
  readonly coAuthor: string;
}

/**
 * Every variable through which a real credential or a provider address could reach an agent.
 * A launch clears them all, then sets only its own placeholder and the proxy's address.
 */
export const CREDENTIAL_VARS = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "ANTHROPIC_OAUTH_TOKEN",
  "CLAUDE_CODE_OAUTH_TOKEN_FILE_DESCRIPTOR",
  "CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR",
  "ANTHROPIC_BASE_URL",
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "CODEX_API_KEY",
  "OPENROUTER_API_KEY",
  "CURSOR_API_KEY",
  "OLLAMA_API_KEY",
  "LAZY_MCP_TOKEN",
  "LAZY_MCP_URL",
] as const;
