/**
 * Cursor's session tokens, kept from the agent: Cursor trades the key for a session token that
 * every later call carries, so the Cursor route (cursor.ts) swaps each real one in an answer for
 * a placeholder of lazy's own, and back in later requests. The table lives on the main thread
 * (both proxy threads need what either learned); a thread reaches it through `Sessions`.
 */
import { type Grant, Placeholders } from "../identity";

interface Session {
  real: string;
  grantToken: string;
  taskId: string | null;
}

/** The session table as the request path sees it (on a proxy thread, it asks the main thread). */
export interface Sessions {
  swapOut(real: string, grant: Grant): Promise<string>;
  pairs(grantToken: string): Promise<[string, string][]>;
}

/** Session placeholders minted for exchanged Cursor tokens: placeholder → the real token. */
export class CursorSessions {
  private byPlaceholder = new Map<string, Session>();

  swapOut(real: string, grant: Grant): string {
    for (const [ph, s] of this.byPlaceholder) if (s.real === real && s.grantToken === grant.token) return ph;
    const exp = jwtExp(real);
    const ph = Placeholders.sessionToken(exp ? { exp } : {});
    this.byPlaceholder.set(ph, { real, grantToken: grant.token, taskId: grant.taskId });
    return ph;
  }

  /** All session placeholders of a grant: swapped back in its Authorization header, scrubbed from its answers. */
  pairs(grantToken: string): [string, string][] {
    const out: [string, string][] = [];
    for (const [ph, s] of this.byPlaceholder) if (s.grantToken === grantToken) out.push([ph, s.real]);
    return out;
  }

  revokeTask(taskId: string): void {
    for (const [ph, s] of this.byPlaceholder) if (s.taskId === taskId) this.byPlaceholder.delete(ph);
  }
}

function jwtExp(token: string): number | undefined {
  const part = token.split(".")[1];
  if (!part) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as { exp?: unknown }).exp;
    return typeof exp === "number" ? exp : undefined;
  } catch {
    return undefined;
  }
}
