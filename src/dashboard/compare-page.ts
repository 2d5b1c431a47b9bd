/** The group page's HTML shell (best-of-N: candidates side by side); client/compare.ts fills it. */
export const GROUP_BODY = `<p id="error" class="error" role="alert" hidden></p>
<header class="task-head"><h1 id="title">Compare</h1><p class="muted"><span id="group"></span> · check: <span id="check">–</span> · on the base: <span id="base">–</span></p></header>
<section aria-labelledby="h-cands"><h2 id="h-cands">Candidates</h2>
<div class="actions"><button type="button" id="run-check">Run check</button></div>
<p id="notice" role="status" class="muted"></p>
<div id="candidates" class="muted">Loading…</div>
<p id="keep" class="actions"></p></section>
<section aria-labelledby="h-pair"><h2 id="h-pair">Diff between two candidates</h2>
<form id="pair" class="actions"><label>From <select id="pair-from" name="from"></select></label><label>To <select id="pair-to" name="to"></select></label><button type="submit">Show diff</button></form>
<div id="pair-diff" class="muted"></div></section>
<section aria-labelledby="h-gprompt"><h2 id="h-gprompt">Prompt</h2><pre id="prompt" class="wrap"></pre></section>`;
