/**
 * cursor-agent: the placeholder in CURSOR_API_KEY, and both of its endpoints (control and
 * agent stream) under the proxy's /_lazy/cursor/<placeholder>/ route, so the placeholder rides
 * in the URL of every request. HTTP/1.1 for the agent stream: the proxy does not speak h2c.
 */
import type { Harness } from "./types";

export const cursor: Harness = {
  name: "cursor",
  slot: () => ({ envVar: "CURSOR_API_KEY", shape: "cursor" }),
  prepare(l) {
    const endpoint = `${l.proxyUrl}/_lazy/cursor/${l.placeholder}`;
    const turn = l.prompt !== undefined ? ["-p", l.prompt, "--output-format", "stream-json", "--force", "--trust"] : [];
    const model = l.profile.model ? ["--model", l.profile.model] : [];
    const resume = l.resume ? ["--resume", l.resume] : [];
    return {
      command: ["cursor-agent", "--endpoint", endpoint, "--agent-endpoint", endpoint, ...model, ...resume, ...turn, ...(l.args ?? [])],
      env: { CURSOR_API_KEY: l.placeholder, CURSOR_API_ENDPOINT: endpoint, CURSOR_CONFIG_DIR: l.configDir },
      files: { "cli-config.json": JSON.stringify({ network: { useHttp1ForAgent: true } }, null, 2) },
    };
  },
};
