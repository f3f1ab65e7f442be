#!/usr/bin/env bash
# The analyzer against captures: other tools' logs (vmstat, sysstat, /proc snapshots, lock
# profiles, Erlang scheduler data, iperf3 JSON) whose truth is known, as they come from other
# people's machines. Each set is a folder bench/captures/SET/ with the logs and an EXPECT file,
# one line per log:
#
#   file|extra `netceil analyze` flags, or nothing|causes that count as right|why, by mechanism
#
# The file field may name several logs of the same minutes, separated by spaces, with `--join`
# in the flags: they are analyzed together as one run (batch13 on).
#
# For each line it runs `netceil analyze --no-store --json FLAGS FILE…` and prints the expected
# causes, the verdict (the first finding's cause) with its confidence, the runner-up, and
#   right   the verdict's cause is one of the expected ones;
#   wrong   the verdict names another cause, a ceiling claim;
#   missed  the verdict is a non-claim (no_ceiling, no_load, unnamed_ceiling, suspect_input,
#           or link_headroom, which is arithmetic only) while something else was expected;
#   error   the import failed or gave no finding.
# Then per set: right N of M, wrong K, missed L (and errors, if any). Each set's figures stand
# on their own. It is a report: it always exits 0.
#
# usage: bench/captures.sh [--set SET|all] [--nc PATH]   (SET: a folder of bench/captures/)
#
# The heldout and *h sets (batch7h, batch8h, batch9h, batch10h, batch11h, batch12h, batch13h) are kept from whoever tunes the analyzer: do not tune against
# them. batch7 and batch7h are one batch, written together before an analyzer change.
set -uo pipefail
cd "$(dirname "$0")/.."

set_=all nc=""
while [ $# -gt 0 ]; do
  case "$1" in
    --set) set_=${2:-}; shift 2 ;;
    --nc) nc=${2:-}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--set SET|all] [--nc PATH]" >&2; exit 0 ;;
  esac
done
all_sets=$(cd bench/captures && for d in */; do [ -f "$d/EXPECT" ] && printf '%s ' "${d%/}"; done)
case "$set_" in
  all) sets=$all_sets ;;
  *) [ -f "bench/captures/$set_/EXPECT" ] ||
       { echo "--set: one of: $all_sets all (got '$set_')" >&2; exit 0; }
     sets=$set_ ;;
esac

if [ -z "$nc" ]; then
  if ! cargo build --release -q -p netceil; then
    echo "captures.sh: the build failed; nothing was analyzed" >&2
    exit 0
  fi
  nc=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
fi
if [ ! -x "$nc" ]; then
  echo "captures.sh: no netceil binary at $nc" >&2
  exit 0
fi
nc=$(realpath "$nc") # the logs are analyzed from their own folder
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NETCEIL_DB="$tmp/runs.db" # --no-store writes nothing; this keeps any store out of $HOME

for s in $sets; do
  dir=bench/captures/$s
  if [ ! -f "$dir/EXPECT" ]; then
    echo "== set $s: $dir/EXPECT does not exist, skipped"
    continue
  fi
  echo "== set $s"
  results="$tmp/$s.tsv"
  : >"$results"
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in ''|'#'*) continue ;; esac
    IFS='|' read -r file flags want why <<<"$line"
    [ -n "$file" ] || continue
    out="$tmp/out.json" err="$tmp/err.txt"
    # Flags are words as a person would type them; none holds a space. The file field is one
    # or more file names (none holds a space either).
    # shellcheck disable=SC2086
    (cd "$dir" && "$nc" analyze --no-store --json $flags $file) >"$out" 2>"$err"
    rc=$?
    got=$(python3 - "$out" "$rc" "$want" <<'PY'
import json, sys
path, rc, want = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
NON_CLAIMS = {"no_ceiling", "no_load", "unnamed_ceiling", "suspect_input", "link_headroom"}
try:
    if rc != 0:
        raise ValueError(f"exit {rc}")
    d = json.load(open(path))
    if isinstance(d, list):
        d = d[0] if d else {}
    fs = d.get("findings") or []
    if not fs:
        raise ValueError("no finding")
    top = fs[0]
    cause = top.get("cause", "none")
    conf = float(top.get("confidence") or 0)
    second = next((x for x in fs[1:] if x.get("cause") not in (cause, "link_headroom")), {})
    if cause in want:
        mark = "right"
    elif cause in NON_CLAIMS:
        mark = "missed"
    else:
        mark = "wrong"
    print(f"{cause}\t{conf:.2f}\t{second.get('cause', '-')}\t{float(second.get('confidence') or 0):.2f}\t{mark}")
except Exception as e:
    print(f"error\t0.00\t-\t0.00\terror")
PY
)
    IFS=$'\t' read -r cause conf second conf2 mark <<<"$got"
    printf '%s\t%s\n' "$file" "$mark" >>"$results"
    printf '%-34s want %-28s got %-18s %s  (runner-up %s %s)  %s\n' \
      "$file" "$want" "$cause" "$conf" "$second" "$conf2" "$mark"
    if [ "$mark" = error ]; then
      echo "    $(head -c 300 "$err" | tr '\n' ' ')"
    fi
  done <"$dir/EXPECT"
  python3 - "$results" "$s" <<'PY'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
c = collections.Counter(m for _, m in rows)
tail = f", errors {c['error']}" if c["error"] else ""
print(f"-- set {sys.argv[2]}: right {c['right']} of {len(rows)}, wrong {c['wrong']}, missed {c['missed']}{tail}\n")
PY
done
exit 0
