import { command, print } from "../command";
import * as Client from "../client";
import { findProjectRoot } from "../../util/paths";
import { LazyError } from "../../util/errors";
import type { Status } from "../../daemon";

export const dashboard = command({
  meta: { name: "dashboard", description: "Print the dashboard's address, signed in (the token rides in the URL fragment)" },
  args: {},
  async run() {
    const c = await Client.connect(findProjectRoot());
    const s = await c.request<Status>("GET", "/api/status");
    if (!s.web.url) throw new LazyError("invalid_input", "The dashboard is off ([server] web = false in lazy.toml).");
    print(`${s.web.url}#token=${c.authToken}`);
  },
});
