/**
 * Set before Prism loads (highlight.ts imports this first): Prism then never highlights the page
 * by itself on load, nor listens for a worker's messages. lazy asks it for tokens only.
 */
(globalThis as { Prism?: unknown }).Prism = { manual: true, disableWorkerMessageHandler: true };
