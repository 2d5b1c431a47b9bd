import type { DaemonStatus } from "../../daemon";
import { LazyError } from "../../util/errors";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, print, printJson } from "../command";

export const dashboard = command({
  meta: { name: "dashboard", description: "Print the dashboard's address, signed in (the token rides in the URL fragment)" },
  args: { json: { type: "boolean", description: "Print JSON on stdout: the signed-in url" } },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const s = await c.request<DaemonStatus>("GET", "/api/status");
    if (!s.web.url) throw new LazyError("invalid_input", "The dashboard is off ([server] web = false in lazy.toml).");
    const url = `${s.web.url}#token=${c.authToken}`;
    if (args.json) printJson({ url });
    else print(url);
  },
});
