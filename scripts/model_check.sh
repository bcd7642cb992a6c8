#!/usr/bin/env bash
# Model-checks the epoch termination detector (model/termination.pml) with spin:
# the correct configurations must verify without errors, and every mutant (a
# deliberately broken detector) must be caught.  See model/README.md.
#   scripts/model_check.sh            all checks, MC_JOBS (default: nproc, max 2) at a time
#   MC_KEEP=1 scripts/model_check.sh  keep the work directory (pan outputs, trails)
#   MC_EXTENDED=1 scripts/model_check.sh  also larger bounds (several minutes, ~3 GB per run)
# Prints one line per check; exits non-zero if a correct configuration reports an
# error or an incomplete search, or a mutant is not caught (by the expected error).
set -euo pipefail
cd "$(dirname "$0")/.."
model="$PWD/model/termination.pml"

if ! command -v spin >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "model_check: spin is not installed (apt-get install spin, as root)" >&2
    exit 1
  fi
  echo "model_check: installing spin with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends spin >/dev/null
fi
command -v gcc >/dev/null 2>&1 || { echo "model_check: gcc is required" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/am-model-check.XXXXXX")"
if [ "${MC_KEEP:-0}" = 1 ]; then
  echo "model_check: work directory $work" >&2
else
  trap 'rm -rf "$work"' EXIT
fi
jobs_max="${MC_JOBS:-$(nproc)}"
[ "$jobs_max" -gt 2 ] && [ -z "${MC_JOBS:-}" ] && jobs_max=2   # each pan may take ~1 GB

# pan settings: DFS depth bound far above the ~700 steps the deepest run reaches;
# a 2^24-slot hash table (resized by pan if needed); states stored compressed
# (COLLAPSE) and at most MEMLIM MB, so a run out of bounds fails instead of swapping.
depth=100000
hash=24
memlim=3000
[ "${MC_EXTENDED:-0}" = 1 ] && memlim=8000
cc_common="-O2 -w -DCOLLAPSE -DMEMLIM=$memlim"

# Bounds: model/README.md, "Bounds of each check".  GENMOD=2 stores the barrier
# generation as one bit; the barrier-gen4 check keeps it modulo 4 and asserts that it
# never moves by more than one generation while a rank waits, which justifies the bit.
general="-DGENMOD=2 -DMAIN1=2 -DBUDGET1=4"
depthd="-DDETECTOR_DEPTH -DD=1 -DGENMOD=2 -DMAIN1=2 -DBUDGET1=3"
epochs="-DNEPOCHS=2 -DGENMOD=2 -DMAIN1=1 -DBUDGET1=3 -DMAIN2=1 -DBUDGET2=2"
small="-DGENMOD=2 -DMAIN1=2 -DBUDGET1=3"

# name | mode | expectation | spin -D flags
#   mode safety: assertions and invalid end states (deadlocks), drain may stop early
#   mode np:     non-progress cycles with no progress labels = any cycle at all, i.e.
#                an execution that never ends; needs FULL_DRAIN (see README)
#   expectation: ok, or the error the mutant must be caught by (pan's message;
#                alternatives separated by ';')
# Listed roughly longest first, so that the parallel runs finish together.
checks=(
  "general-safety|safety|ok|$general"
  "two-epochs-terminates|np|ok|$epochs -DFULL_DRAIN"
  "two-epochs-safety|safety|ok|$epochs"
  "general-terminates|np|ok|$general -DFULL_DRAIN"
  "barrier-gen4-safety|safety|ok|-DNEPOCHS=2 -DGENMOD=4 -DMAIN1=1 -DBUDGET1=2 -DMAIN2=1 -DBUDGET2=1"
  "depth1-safety|safety|ok|$depthd"
  "depth1-terminates|np|ok|$depthd -DFULL_DRAIN"
  "main-interleaved-safety|safety|ok|-DMAIN_INTERLEAVED $small"
  "count-at-append-no-flush-safety|safety|ok|-DMUTANT_COUNT_AT_APPEND -DMUTANT_NO_FLUSH $small"
  "MUTANT-a-one-wave|safety|assertion violated (outstanding|-DMUTANT_ONE_WAVE $general"
  "MUTANT-b-no-flush|safety|assertion violated (outstanding|-DMUTANT_NO_FLUSH $general"
  "MUTANT-b-no-flush-depth1|safety|assertion violated (outstanding|-DMUTANT_NO_FLUSH $depthd"
  "MUTANT-c-depth-overflow|safety|assertion violated ((hl+1)<=1)|-DMUTANT_DEPTH_OVERFLOW $depthd"
  "MUTANT-c-depth-overflow-noguard|safety|assertion violated (outstanding|-DMUTANT_DEPTH_OVERFLOW -DNO_DEPTH_GUARD $depthd"
  "MUTANT-single-slot|safety|invalid end state;assertion violated (outstanding|-DMUTANT_SINGLE_SLOT $general"
  "MUTANT-lazy-drain-terminates|np|non-progress cycle|$general"
  "MUTANT-count-at-append-no-flush-terminates|np|non-progress cycle|-DMUTANT_COUNT_AT_APPEND -DMUTANT_NO_FLUSH $general -DFULL_DRAIN"
)
if [ "${MC_EXTENDED:-0}" = 1 ]; then
  checks=(
    "ext-general-safety-budget5|safety|ok|-DGENMOD=2 -DMAIN1=1 -DBUDGET1=5"
    "ext-depth1-two-epochs-safety|safety|ok|-DDETECTOR_DEPTH -DNEPOCHS=2 -DGENMOD=2 -DMAIN1=1 -DBUDGET1=3 -DMAIN2=1 -DBUDGET2=2"
    "ext-depth1-safety-budget4|safety|ok|-DDETECTOR_DEPTH -DGENMOD=2 -DMAIN1=2 -DBUDGET1=4"
    "ext-general-terminates-budget5|np|ok|-DGENMOD=2 -DMAIN1=1 -DBUDGET1=5 -DFULL_DRAIN"
    "ext-depth1-two-epochs-terminates|np|ok|-DDETECTOR_DEPTH -DNEPOCHS=2 -DGENMOD=2 -DMAIN1=1 -DBUDGET1=3 -DMAIN2=1 -DBUDGET2=2 -DFULL_DRAIN"
    "${checks[@]}"
  )
fi

# run_check INDEX: runs one check in its own directory, writes INDEX.line and INDEX.rc
run_check() {
  local i="$1" name mode expect flags dir t0 t1 out states err rc line alts
  IFS='|' read -r name mode expect flags <<<"${checks[$i]}"
  dir="$work/$i-$name"
  mkdir -p "$dir"
  cp "$model" "$dir/termination.pml"
  t0=$(date +%s.%N)
  (
    cd "$dir"
    # shellcheck disable=SC2086
    spin -a $flags termination.pml >spin.out 2>&1
    if [ "$mode" = np ]; then
      # shellcheck disable=SC2086
      gcc $cc_common -DNP -o pan pan.c >gcc.out 2>&1
      ./pan -l -m"$depth" -w"$hash" >pan.out 2>&1 || true
    else
      # shellcheck disable=SC2086
      gcc $cc_common -DSAFETY -o pan pan.c >gcc.out 2>&1
      ./pan -m"$depth" -w"$hash" >pan.out 2>&1 || true
    fi
  ) || { echo "ERROR $name: spin -a or gcc failed (see $dir)" >"$work/$i.line"; echo 1 >"$work/$i.rc"; return 0; }
  t1=$(date +%s.%N)
  out="$dir/pan.out"
  states=$(awk '/states, stored/ {print $1; exit}' "$out")
  err=$(grep -m1 -oE '^pan:[0-9]+: .*' "$out" | sed 's/^pan:[0-9]*: //' || true)
  local nerr; nerr=$(sed -nE 's/.*errors: ([0-9]+).*/\1/p' "$out" | head -1)
  rc=0
  if [ "$expect" = ok ]; then
    if [ "$nerr" != 0 ]; then
      line="FAIL     $name: ${err:-errors: ${nerr:-?}}"; rc=1
    elif grep -q "max search depth too small" "$out"; then
      line="FAIL     $name: max search depth too small (-m$depth)"; rc=1
    elif grep -qiE "out of memory|MEMLIM|Search not completed" "$out"; then
      line="FAIL     $name: incomplete search ($(grep -m1 -iE 'out of memory|MEMLIM|not completed' "$out"))"; rc=1
    else
      line="ok       $name: no errors"
    fi
  else
    local alt hit=0
    IFS=';' read -ra alts <<<"$expect"
    for alt in "${alts[@]}"; do grep -qF "pan:1: $alt" "$out" && hit=1; done
    if [ "${nerr:-0}" -gt 0 ] && [ $hit = 1 ]; then
      line="caught   $name: $err"
    elif [ "${nerr:-0}" -gt 0 ]; then
      line="WRONG    $name: caught, but not by '$expect': $err"; rc=1
    else
      line="MISSED   $name: no error found"; rc=1
    fi
  fi
  local pant; pant=$(sed -nE 's/^pan: elapsed time ([0-9.e+-]+) seconds.*/\1/p' "$out" | head -1)
  printf '%-62s [%s: %s states, pan %s s, with compile %s s]\n' "$line" "$mode" "${states:-?}" \
    "${pant:-?}" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >"$work/$i.line"
  echo "$rc" >"$work/$i.rc"
}

echo "model_check: spin $(spin -V | awk '{print $3}'), ${#checks[@]} checks, $jobs_max at a time"
start=$(date +%s.%N)
for i in "${!checks[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  run_check "$i" &
done
wait

status=0
for i in "${!checks[@]}"; do
  cat "$work/$i.line"
  [ "$(cat "$work/$i.rc")" = 0 ] || status=1
done
# CPU time (user + sys) of spin, gcc and pan: the second line of `times` (children),
# "XmY.YYYs XmY.YYYs"; redirected, not piped, so that it runs in this shell
times >"$work/times"
cpu=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%.0f", t }' "$work/times")
printf 'model_check: %s in %s s (CPU %s s)\n' "$([ $status = 0 ] && echo 'all checks passed' || echo 'FAILED')" \
  "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')" "$cpu"
exit $status
