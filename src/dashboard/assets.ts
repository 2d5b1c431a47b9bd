/**
 * The dashboard's static files, compiled into the binary (bundle.ts runs at build time): the
 * client script, the stylesheet and the favicon. Each is served under a name carrying its hash,
 * cached for good, so a page load after the first asks the daemon for its shell and data only.
 */
import { clientScript, stylesheet } from "./bundle" with { type: "macro" };

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2f6f4e"/><path d="M10 7v18h12" stroke="#fff" stroke-width="4" fill="none" stroke-linecap="round"/></svg>`;

export interface Asset {
  path: string;
  type: string;
  body: string;
  immutable: boolean;
}

const hashed = (name: string, ext: string, body: string) => `/assets/${name}.${Bun.hash(body).toString(36)}.${ext}`;
const js: string = clientScript();
const css: string = stylesheet();

export const SCRIPT: Asset = { path: hashed("app", "js", js), type: "text/javascript; charset=utf-8", body: js, immutable: true };
export const STYLE: Asset = { path: hashed("app", "css", css), type: "text/css; charset=utf-8", body: css, immutable: true };
export const ICON: Asset = { path: "/favicon.svg", type: "image/svg+xml", body: FAVICON, immutable: false };

const byPath = new Map<string, Asset>([SCRIPT, STYLE, ICON, { ...ICON, path: "/favicon.ico" }].map((a) => [a.path, a]));

export const asset = (path: string): Asset | undefined => byPath.get(path);

/** Every shipped asset, for the size budget (bench/dashboard.ts, the suite). */
export const ASSETS: readonly Asset[] = [SCRIPT, STYLE, ICON];
