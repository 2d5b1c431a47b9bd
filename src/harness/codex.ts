/**
 * Codex: a provider block lazy owns in CODEX_HOME/config.toml, rewritten before every turn.
 * Not named "openai" (that switches on OpenAI-only behaviour), wire_api "responses", no
 * websockets, base_url the proxy, and the placeholder in OPENAI_API_KEY, which Codex sends as
 * a bearer header on every request.
 *
 * In an agent-written worktree (lazy pair) the same file marks that folder untrusted: Codex
 * loads a project's .codex (config layers, hooks) only from a trusted folder, and an explicit
 * "untrusted" also keeps the interactive TUI from offering to trust it.
 */
import { stringify } from "smol-toml";
import { LazyError } from "../util/errors";
import * as Mcp from "./mcp";
import type { Harness } from "./types";
import * as Worktree from "./worktree";

export const codex: Harness = {
  name: "codex",
  coAuthor: "Codex <noreply@openai.com>",
  binary: "codex",
  slot: (_profile, real) => ({ envVar: "OPENAI_API_KEY", shape: real.openrouter ? "openrouter" : "openai" }),
  prepare(l) {
    if (!/^https?:\/\/[^/]+/.test(l.proxyUrl))
      throw new LazyError(
        "launch_refused",
        "Codex cannot be launched without the proxy's address; it would dial OpenAI unaudited. Run lazy doctor.",
      );
    const config = {
      model: l.profile.model ?? "gpt-5",
      model_provider: "lazy",
      model_providers: {
        lazy: {
          name: "lazy proxy",
          base_url: `${l.proxyUrl}/v1`,
          env_key: "OPENAI_API_KEY",
          wire_api: "responses",
          supports_websockets: false,
          requires_openai_auth: false,
        },
      },
      ...(l.untrustedCwd ? { projects: { [l.untrustedCwd]: { trust_level: "untrusted" } } } : {}),
      // lazy's tools: approved (exec would block them), required (a failing server would be
      // dropped silently otherwise: now exec exits 1 naming it), the token from a variable.
      ...(l.mcp
        ? {
            mcp_servers: {
              [Mcp.SERVER]: {
                url: l.mcp.url,
                bearer_token_env_var: Mcp.MCP_TOKEN_VAR,
                default_tools_approval_mode: "approve",
                required: true,
              },
            },
          }
        : {}),
    };
    const turn =
      l.prompt !== undefined
        ? ["exec", "--json", "--skip-git-repo-check", ...(l.resume ? ["resume", l.resume] : []), l.prompt]
        : l.resume
          ? ["resume", l.resume]
          : [];
    return {
      command: ["codex", ...turn, ...(l.args ?? [])],
      env: { CODEX_HOME: l.configDir, OPENAI_API_KEY: l.placeholder, ...(l.mcp ? { [Mcp.MCP_TOKEN_VAR]: l.mcp.token } : {}) },
      files: { "config.toml": `# Written by lazy before every turn; edits are overwritten.\n${stringify(config)}\n` },
    };
  },
  inspect(worktree) {
    const notLoaded = Worktree.entries(worktree, ".codex");
    if (Worktree.kind(worktree, ".codex") === "link") notLoaded.push(".codex (a link)");
    return { notLoaded, refused: [] };
  },
  sessions: ["sessions", "archived_sessions", "session_index.jsonl"],
};
