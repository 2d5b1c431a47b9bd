/**
 * Request plugins (`[[proxy.plugins]]`): modules installed under the lazy home whose default
 * export sees each outbound model request before the credential goes in, and may pass it, note
 * it, refuse it or rewrite it. `place.ts` decides which files may load (the main thread and
 * lazy doctor), `chain.ts` loads them in each proxy thread and runs them, `types.ts` is the
 * contract a plugin is written against. With no plugin configured the request path never
 * reaches this room.
 */

export { Chain, load, type Outcome, problems } from "./chain";
export { folder, resolve } from "./place";
export type { PluginFunction, PluginRequest, PluginResult, Spec } from "./types";
