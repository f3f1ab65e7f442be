#!/usr/bin/env bash
# Renders real netceil HTML reports in headless Chromium and fails if the browser logs
# anything to the console (the report has no scripts, so any console line is a CSP
# violation, a blocked fetch or a load error), or if the page did not parse to its end.
# Saves a screenshot of a one-run report to docs/report-screenshot.png.
#
# Usage: scripts/check-report-browser.sh [--no-screenshot]
# Needs: cargo; chromium (Debian's package is installed with apt-get when missing and root).
# Generates only loopback traffic (netceil's in-process receiver), ~15 s of it.
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$(pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
screenshot=1
[ "${1:-}" = "--no-screenshot" ] && screenshot=0

say() { printf '%s\n' "check-report-browser: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Debian's chromium"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        fail "chromium is not installed; install it with: sudo apt-get install -y chromium"
    fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say "building netceil and the report example"
cargo build -q -p netceil
cargo build -q -p netceil-report --example report_from_json
netceil="$CARGO_TARGET_DIR/debug/netceil"
report="$CARGO_TARGET_DIR/debug/examples/report_from_json"

say "recording real runs on loopback"
"$netceil" run udp --duration 8 --json -q --no-store --label purpose=browser-check >"$work/udp.json"
"$netceil" run tcp --duration 3 --json -q --no-store >"$work/tcp.json"
"$netceil" run rr --duration 3 --json -q --no-store >"$work/rr.json"

"$report" -o "$work/one.html" "$work/udp.json"
"$report" -o "$work/all.html" "$work/udp.json" "$work/tcp.json" "$work/rr.json"

# Runs headless Chromium on a file; the console log goes to $2.log, the DOM to $2.dom.
browse() {
    local page=$1 out=$2
    shift 2
    timeout 120 chromium --headless --no-sandbox --disable-gpu \
        --disable-background-networking --disable-component-update --disable-sync \
        --no-first-run --user-data-dir="$work/profile-$(basename "$out")" \
        --enable-logging=stderr --v=0 "$@" "file://$page" \
        >"$out.dom" 2>"$out.log" || fail "chromium failed on $page (log: $(tail -3 "$out.log"))"
}

console_lines() { grep -c 'CONSOLE' "$1" || true; }

# Negative controls: pages with a CSP-blocked fetch and a console error must be caught,
# or the detection below proves nothing.
cat >"$work/control-csp.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>control</title></head><body><img src="https://example.invalid/x.png" alt=""></body></html>
EOF
cat >"$work/control-error.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8"><title>control</title></head>
<body><script>console.error("control error")</script></body></html>
EOF
for control in control-csp control-error; do
    browse "$work/$control.html" "$work/$control" --dump-dom
    [ "$(console_lines "$work/$control.log")" -gt 0 ] ||
        fail "the console check missed the error in $control.html; it cannot be trusted"
done

for page in one all; do
    browse "$work/$page.html" "$work/$page" --dump-dom
    errors=$(console_lines "$work/$page.log")
    if [ "$errors" -ne 0 ]; then
        grep 'CONSOLE' "$work/$page.log" >&2
        fail "$page.html: $errors console message(s)"
    fi
    # The DOM must hold every chart and reach the footer: nothing was cut or misparsed.
    want=$(grep -o '<svg ' "$work/$page.html" | wc -l)
    got=$(grep -o '<svg ' "$work/$page.dom" | wc -l)
    [ "$want" -gt 0 ] || fail "$page.html has no charts"
    [ "$got" -eq "$want" ] || fail "$page.html: $want charts in the file, $got in the browser's DOM"
    grep -q '</footer>' "$work/$page.dom" || fail "$page.html: the DOM does not reach the footer"
    say "$page.html: $got charts, no console messages"
done

if [ "$screenshot" -eq 1 ]; then
    mkdir -p docs
    browse "$work/one.html" "$work/shot" --screenshot="$repo/docs/report-screenshot.png" \
        --window-size=1400,3000 --hide-scrollbars
    [ -s docs/report-screenshot.png ] || fail "no screenshot was written"
    say "saved docs/report-screenshot.png"
fi
say "ok"
