/**
 * The last hop's swap: which of lazy's placeholders a brokered request's headers carry, and the
 * headers with the task's own placeholder for this service replaced by the real secret, in the
 * form it was sent in (as is in any header value, `Bearer`/`token`, or the password inside
 * `Basic`). A placeholder that is not the task's for this service (another task's, a model
 * profile's, another service's) is named, never swapped: the request is refused.
 */
export interface Known {
  token: string;
  /** Whose it is, for the refusal ("task k3f9's placeholder for github", "task k3f9's model placeholder"). */
  who: string;
}

const BASIC = /^(\s*basic\s+)([A-Za-z0-9+/=_-]+)\s*$/i;

/** Every header value as sent, and a Basic one's decoded user:password too. */
function* valuesOf(headers: Headers): Generator<string> {
  for (const [, v] of headers) {
    yield v;
    const basic = BASIC.exec(v);
    if (basic) yield Buffer.from(basic[2]!, "base64").toString("latin1");
  }
}

/** A placeholder of lazy's in the headers that is not `mine` (null: the caller may swap none). */
export function foreignIn(headers: Headers, mine: string | null, find: (text: string) => Known | undefined): Known | undefined {
  for (const v of valuesOf(headers)) {
    const k = find(v);
    if (k && k.token !== mine) return k;
  }
  return undefined;
}

/** Whether the headers carry `mine` anywhere a swap reaches. */
export function carriesMine(headers: Headers, mine: string): boolean {
  for (const v of valuesOf(headers)) if (v.includes(mine)) return true;
  return false;
}

/** The headers with `mine` replaced by `secret`, in the form each value carried it. */
export function swapIn(headers: Headers, mine: string, secret: string): Headers {
  const out = new Headers();
  for (const [name, v] of headers) {
    let value = v;
    if (value.includes(mine)) value = value.split(mine).join(secret);
    else {
      const basic = BASIC.exec(value);
      const decoded = basic ? Buffer.from(basic[2]!, "base64").toString("latin1") : "";
      if (basic && decoded.includes(mine))
        value = `${basic[1]}${Buffer.from(decoded.split(mine).join(secret), "latin1").toString("base64")}`;
    }
    out.append(name, value);
  }
  return out;
}
