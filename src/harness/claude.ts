/**
 * Claude Code: the proxy as its API base address, exactly one credential variable (chosen by
 * the real credential's kind), nonessential traffic off so only model calls go out. Headless
 * turns use -p with stream-json, which needs --verbose.
 *
 * In an agent-written worktree (lazy pair) Claude Code reads only lazy's own settings
 * (`--setting-sources user`: CLAUDE_CONFIG_DIR is lazy's folder), so the project's
 * .claude/settings*.json hooks, its skills, agents and commands stay off, and
 * `--strict-mcp-config` keeps .mcp.json's servers from starting. `-p` skips the trust dialog
 * that would otherwise ask. CLAUDE.md still loads: it is instructions, not code.
 */

import * as Mcp from "./mcp";
import type { Harness } from "./types";
import * as Worktree from "./worktree";

const SETTINGS = [".claude/settings.json", ".claude/settings.local.json"];
const FOLDERS = [".claude/skills", ".claude/agents", ".claude/commands", ".claude/output-styles"];

export const claude: Harness = {
  name: "claude",
  coAuthor: "Claude <noreply@anthropic.com>",
  binary: "claude",
  slot(_profile, real) {
    if (real.bearer) return { envVar: "ANTHROPIC_AUTH_TOKEN", shape: real.openrouter ? "openrouter" : "generic" };
    return real.kind === "oauth-token"
      ? { envVar: "CLAUDE_CODE_OAUTH_TOKEN", shape: "anthropic-oauth" }
      : { envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" };
  },
  prepare(l) {
    const model = l.profile.model ? ["--model", l.profile.model] : [];
    const turn = l.promptOnStdin
      ? ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
      : l.prompt !== undefined
        ? ["-p", l.prompt, "--output-format", "stream-json", "--verbose"]
        : [];
    const resume = l.resume ? ["--resume", l.resume] : [];
    const untrusted = l.untrustedCwd ? ["--setting-sources", "user", "--strict-mcp-config"] : [];
    // lazy's tools: loaded up front (alwaysLoad; else they hide behind ToolSearch) and allowed
    // (-p denies an unapproved tool); only lazy's server, whatever the worktree declares.
    const mcp = l.mcp
      ? [
          "--mcp-config",
          `${l.configDir}/mcp.json`,
          ...(l.untrustedCwd ? [] : ["--strict-mcp-config"]),
          "--allowedTools",
          `mcp__${Mcp.SERVER}`,
        ]
      : [];
    return {
      command: ["claude", ...untrusted, ...mcp, ...model, ...resume, ...turn, ...(l.args ?? [])],
      env: {
        // Claude Code waits MCP_CONNECT_TIMEOUT_MS (5 s by default) for its MCP servers, then
        // starts the turn with lazy's "pending", which lazy stops as blind: on a loaded machine
        // (CI) the first connect can take longer. A server that refuses still fails at once.
        ...(l.mcp ? { [Mcp.MCP_TOKEN_VAR]: l.mcp.token, MCP_CONNECTION_NONBLOCKING: "0", MCP_CONNECT_TIMEOUT_MS: "60000" } : {}),
        ANTHROPIC_BASE_URL: l.proxyUrl,
        // A bearer slot (OpenRouter, hosted Ollama): the key goes in ANTHROPIC_AUTH_TOKEN and
        // ANTHROPIC_API_KEY is set empty, as OpenRouter's guide says (docs/wire.md, "OpenRouter").
        ...(l.envVar === "ANTHROPIC_AUTH_TOKEN" ? { ANTHROPIC_API_KEY: "" } : {}),
        [l.envVar]: l.placeholder,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CONFIG_DIR: l.configDir,
        ...(l.oneShot ? { CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS: "1" } : {}),
      },
      files: {
        // Interactive sessions ask once to approve an API key; approve the placeholder (its last
        // 20 characters, as Claude Code stores them) and skip the first-run screens.
        ".claude.json": JSON.stringify(
          { hasCompletedOnboarding: true, customApiKeyResponses: { approved: [l.placeholder.slice(-20)], rejected: [] } },
          null,
          2,
        ),
        ...(l.mcp
          ? {
              "mcp.json": JSON.stringify(
                {
                  mcpServers: {
                    [Mcp.SERVER]: {
                      type: "http",
                      url: l.mcp.url,
                      headers: { Authorization: `Bearer \${${Mcp.MCP_TOKEN_VAR}}` },
                      alwaysLoad: true,
                    },
                  },
                },
                null,
                2,
              ),
            }
          : {}),
      },
    };
  },
  // With --input-format stream-json: one user message, then stdin closes and the turn ends.
  stdinPrompt: (prompt) => `${JSON.stringify({ type: "user", message: { role: "user", content: prompt } })}\n`,
  inspect(worktree) {
    const notLoaded: string[] = [];
    for (const rel of SETTINGS) {
      const found = Worktree.json(worktree, rel);
      if (found) notLoaded.push(Worktree.describe(rel, found));
    }
    const mcp = Worktree.json(worktree, ".mcp.json");
    if (mcp) {
      const servers = mcp.ok && mcp.value.mcpServers && typeof mcp.value.mcpServers === "object" ? Object.keys(mcp.value.mcpServers) : [];
      notLoaded.push(mcp.ok && servers.length ? `.mcp.json (MCP servers: ${servers.join(", ")})` : Worktree.describe(".mcp.json", mcp));
    }
    for (const rel of FOLDERS) {
      const names = Worktree.names(worktree, rel);
      if (names.length) notLoaded.push(`${rel} (${names.join(", ")})`);
      else if (Worktree.kind(worktree, rel) === "link") notLoaded.push(`${rel} (a link)`);
    }
    return { notLoaded, refused: [] };
  },
  sessions: ["projects"],
};
