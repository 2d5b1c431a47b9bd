/**
 * cursor-agent: the placeholder in CURSOR_API_KEY, and both of its endpoints (control and
 * agent stream) under the proxy's /_lazy/cursor/<placeholder>/ route, so the placeholder rides
 * in the URL of every request. HTTP/1.1 for the agent stream: the proxy does not speak h2c.
 *
 * cursor-agent has no switch to skip a workspace's own configuration, and it also reads Claude
 * Code's project settings. In an agent-written worktree (lazy pair) a launch is refused while
 * the worktree carries any of it.
 */

import * as Mcp from "./mcp";
import type { Harness } from "./types";
import * as Worktree from "./worktree";

/** Project files cursor-agent reads that can run code (hooks, MCP servers) or set permissions. */
const PROJECT = [
  ".cursor/hooks.json",
  ".cursor/mcp.json",
  ".cursor/cli.json",
  ".cursor/cli-config.json",
  ".cursor/hooks",
  ".claude/settings.json",
  ".claude/settings.local.json",
];

export const cursor: Harness = {
  name: "cursor",
  coAuthor: "Cursor Agent <cursoragent@cursor.com>",
  binary: "cursor-agent",
  slot: () => ({ envVar: "CURSOR_API_KEY", shape: "cursor" }),
  prepare(l) {
    const endpoint = `${l.proxyUrl}/_lazy/cursor/${l.placeholder}`;
    const turn =
      l.prompt !== undefined
        ? ["-p", l.prompt, "--output-format", "stream-json", "--force", "--trust", ...(l.mcp ? ["--approve-mcps"] : [])]
        : [];
    const model = l.profile.model ? ["--model", l.profile.model] : [];
    const resume = l.resume ? ["--resume", l.resume] : [];
    return {
      command: ["cursor-agent", "--endpoint", endpoint, "--agent-endpoint", endpoint, ...model, ...resume, ...turn, ...(l.args ?? [])],
      env: {
        CURSOR_API_KEY: l.placeholder,
        CURSOR_API_ENDPOINT: endpoint,
        CURSOR_CONFIG_DIR: l.configDir,
        ...(l.mcp ? { [Mcp.MCP_TOKEN_VAR]: l.mcp.token } : {}),
      },
      files: {
        "cli-config.json": JSON.stringify(
          { network: { useHttp1ForAgent: true }, ...(l.mcp ? { permissions: { allow: [`Mcp(${Mcp.SERVER}, *)`] } } : {}) },
          null,
          2,
        ),
        // cursor-agent's mcp.json (docs/wire.md, "MCP wiring per harness": from its docs, not runnable here).
        ...(l.mcp
          ? {
              "mcp.json": JSON.stringify(
                { mcpServers: { [Mcp.SERVER]: { url: l.mcp.url, headers: { Authorization: `Bearer \${env:${Mcp.MCP_TOKEN_VAR}}` } } } },
                null,
                2,
              ),
            }
          : {}),
      },
    };
  },
  inspect(worktree) {
    return { notLoaded: [], refused: PROJECT.filter((rel) => Worktree.kind(worktree, rel) !== "missing") };
  },
  sessions: ["chats"],
};
