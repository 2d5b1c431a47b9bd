#!/usr/bin/env bash
# lazy's one test command: prepare the machine, install, build, run every test.
#   bash scripts/test.sh [bun test args...]     e.g. bash scripts/test.sh test/proxy
# Both tiers (the fast one alone: bun run test:fast, scripts/test-fast.ts). Prints first what
# ran (commit, bun, Docker, the harness versions lazy's image installs), after the run each
# file's time and the skipped tests (from the JUnit report it writes: test-artifacts/junit.xml).
# Last line printed: "tests: N passed, M failed[, K skipped][, E errors]". Exit code: bun test's
# (non-zero as well when no test ran).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup-test-env.sh

if ! bun install --frozen-lockfile; then
  echo "test.sh: 'bun install --frozen-lockfile' failed; retrying with plain 'bun install'" >&2
  bun install
fi
bun run build

# What ran, for a CI log read later: the commit (and whether the tree had edits), the tools.
dirty=""
[ -n "$(git status --porcelain 2>/dev/null)" ] && dirty=" (with uncommitted changes)"
echo "test.sh: commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$dirty"
echo "test.sh: bun $(bun --version), $(docker version --format 'Docker client {{.Client.Version}}, engine {{.Server.Version}}' 2>/dev/null || echo 'Docker: no engine answers')"
echo "test.sh: harnesses in lazy's image: $(bun -e 'import { Image } from "./src/containers"; console.log(Object.entries(Image.HARNESS_VERSIONS).map(([h, v]) => `${h} ${v}`).join(", "))' 2>/dev/null || echo unknown)"

mkdir -p test-artifacts
junit=test-artifacts/junit.xml
rm -f "$junit"
out="$(mktemp -t lazy-bun-test.XXXXXX)"
trap 'rm -f "$out"' EXIT
set +e
# bun test reads no timeout from bunfig.toml; end-to-end tests build images and run agents.
bun test --timeout 900000 --reporter=junit --reporter-outfile="$junit" "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
set -e
bun scripts/test-report.ts "$junit" || true

# bun's summary lines (stderr): " 12 pass", " 0 fail", " 1 skip". Strip colour codes first.
count() {
  sed -E 's/\x1b\[[0-9;]*m//g' "$out" | awk -v w="$1" '($2 == w || $2 == w "s") && $1 ~ /^[0-9]+$/ && NF == 2 { n = $1 } END { print n + 0 }'
}
pass=$(count pass); fail=$(count fail); skip=$(count skip); errors=$(count error)

# A failure's cause is printed above its "(fail)" line, often thousands of lines before the end;
# CI shows only the tail, so each failed test's output is printed again here (60 lines at most).
if [ "$fail" -gt 0 ]; then
  echo "--- failed tests, with what they printed ---"
  sed -E 's/\x1b\[[0-9;]*m//g' "$out" | awk '
    /^\(pass\)|^\(skip\)|^\(todo\)|^[^ ]+\.test\.tsx?:$/ { n = 0; next }
    /^\(fail\)/ { if (n > 0 && !seen[$0]++) { s = n > 60 ? n - 60 : 0; for (i = s + 1; i <= n; i++) print buf[i]; print $0; print "" } n = 0; next }
    { buf[++n] = $0 }'
fi

line="tests: $pass passed, $fail failed"
[ "$skip" -gt 0 ] && line="$line, $skip skipped"
# " N error": errors thrown outside any test (bun exits 1 for them even with 0 failed).
[ "$errors" -eq 1 ] && line="$line, 1 error"
[ "$errors" -gt 1 ] && line="$line, $errors errors"
echo "$line"
if [ "$rc" -eq 0 ] && [ $((pass + fail)) -eq 0 ]; then
  echo "test.sh: bun test ran zero tests" >&2
  rc=1
fi
exit "$rc"
