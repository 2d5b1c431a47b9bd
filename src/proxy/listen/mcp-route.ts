/**
 * What the proxy's listeners answer themselves, before any upstream's surface: lazy's MCP route
 * (handed to the main thread, where the MCP server runs: src/mcp), and a 404 for the daemon's
 * own API, which lives on another listener and is never served on these, token or not. The
 * daemon tells the proxy its API's roots (ModelProxy.notServed), so the list lives once.
 */
export const MCP_PATH = "/mcp";

/** The refusal of an MCP request with no token: said by a proxy thread itself, without asking the main thread. */
export const MCP_NO_TOKEN = { message: "lazy's MCP route needs the task's token (Authorization: Bearer …).", note: "no MCP token" };

/** Is the path (with its query) one of these roots, or below one? */
export function under(path: string, roots: readonly string[]): boolean {
  for (const r of roots)
    if (path.startsWith(r) && (path.length === r.length || path[r.length] === "/" || path[r.length] === "?")) return true;
  return false;
}
