#!/usr/bin/env bash
# Every exit code of the table (cli/exit_codes.cpp, README's "Exit codes") is returned by a real
# command line, with no GPU: a missing file named on the command line is 1 for every command;
# an invalid manifest or config, a config without tasks and a task that cannot run are 2; a
# missing nvcc is 3; a skill memory cut short is 5; each typed failure 11..24 comes from `eval` against the scripted worker
# (tests/gpu/scripted_worker.cpp) failing that way; 130 from an interrupted dry run.
# nvcc is tests/actors/fake_nvcc.sh throughout: fast, and the same on every machine.
# Usage: exit_codes.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: exit_codes.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: exit_codes.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

worker="$(dirname "$ks")/ks-scripted-worker"
[ -x "$worker" ] || { echo "FAIL: no scripted worker at $worker: build ks-scripted-worker" >&2; exit 1; }
export KS_NVCC="$src/tests/actors/fake_nvcc.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
. "$src/tests/cli/wait_for.sh"

# expect CODE NAME ARGS...: runs kernelskill ARGS, wants exit CODE; the output is in out, err.
expect() {
  local code=$1 name=$2; shift 2
  timeout 120 "$ks" "$@" >out 2>err; local rc=$?
  [ "$rc" -eq "$code" ] || fail "$name: exit $rc, wanted $code: $(cat out err)"
}

cp "$src/tests/gpu/references/relu_ref.cu" relu_ref.cu
sed 's|name = "relu"|name = "relu"\nreference = "relu_ref.cu"|' \
  "$src/tasks/quickstart/19_relu.toml" >relu.toml
cp relu_ref.cu good.cu
cat >campaign.toml <<TOML
[campaign]
tasks = ["relu.toml"]
output = "campaign-out"
TOML

# 0: success.
expect 0 "config --defaults" config --defaults
expect 0 "config --check" config --check campaign.toml
expect 0 "task check" task check relu.toml

# 1: a bad command line, or a file or folder named on it that does not exist: every command.
expect 1 "an unknown option" run --frobnicate campaign.toml
expect 1 "run missing.toml" run missing.toml
grep -q "missing.toml" err || fail "run missing.toml: the file is not named: $(cat err)"
expect 1 "run --dry-run missing.toml" run missing.toml --dry-run
expect 1 "config --check missing.toml" config --check missing.toml
expect 1 "eval missing.toml good.cu" eval missing.toml good.cu --arch sm_90a
expect 1 "eval relu.toml missing.cu" eval relu.toml missing.cu --arch sm_90a
expect 1 "task check missing.toml" task check missing.toml
expect 1 "status missing-folder" status missing-folder
grep -q "'missing-folder' does not exist" err || fail "status missing-folder: $(cat err)"
expect 1 "inspect missing-folder" inspect missing-folder
expect 1 "run --arch 90" run campaign.toml --dry-run --arch 90
grep -q "not an nvcc architecture" err || fail "run --arch 90: $(cat err)"
expect 1 "eval --arch 90" eval relu.toml good.cu --arch 90
grep -q "not an nvcc architecture" err || fail "eval --arch 90: $(cat err)"
if [ -x /usr/local/cuda/bin/nvcc ]; then
  # Only a real nvcc lists the architectures it knows.
  KS_NVCC=/usr/local/cuda/bin/nvcc expect 1 "run --arch sm_999" run campaign.toml --dry-run --arch sm_999
  grep -q "does not compile for sm_999" err || fail "run --arch sm_999: $(cat err)"
  KS_NVCC=/usr/local/cuda/bin/nvcc expect 1 "eval --arch sm_999" eval relu.toml good.cu --arch sm_999
  grep -q "does not compile for sm_999" err || fail "eval --arch sm_999: $(cat err)"
fi

# 2: an invalid manifest or config, a config without tasks, a task that cannot run.
printf 'name = "relu"\nfamily = "elementwise"\nreference = "relu_ref.cu"\ninputs = 3\n' >bad.toml
expect 2 "eval with an invalid manifest" eval bad.toml good.cu --arch sm_90a
grep -qE 'bad\.toml:4:[0-9]+: ' err || fail "invalid manifest: no bad.toml:4:COL: $(cat err)"
expect 2 "task check with an invalid manifest" task check bad.toml
printf '[campaign]\noutput = "campaign-out"\n' >no-tasks.toml
expect 2 "run without campaign.tasks" run no-tasks.toml --dry-run
grep -q "campaign.tasks is not set" err || fail "run without tasks: $(cat err)"
expect 2 "config --check without campaign.tasks" config --check no-tasks.toml
grep -q "campaign.tasks is not set" out || fail "config --check without tasks: $(cat out err)"
printf '[campaign]\ntasks = ["nowhere/*.toml"]\n' >no-match.toml
expect 2 "config --check with a glob matching nothing" config --check no-match.toml
grep -q "matches no task manifest" out || fail "config --check no-match: $(cat out err)"
mkdir -p empty
expect 2 "status on a folder without a campaign" status empty
printf '// KS_FAKE_COMPILE_ERROR\n' >>broken_ref.cu
cat relu_ref.cu >>broken_ref.cu
sed 's|reference = "relu_ref.cu"|reference = "broken_ref.cu"|' relu.toml >broken.toml
printf '[campaign]\ntasks = ["broken.toml"]\noutput = "campaign-out"\n' >broken-campaign.toml
expect 2 "a dry run whose reference does not compile" run broken-campaign.toml --dry-run --progress 0
expect 2 "task check on a reference that does not compile" task check broken.toml

# 3: the environment: no nvcc.
KS_NVCC="$tmp/no-such-nvcc" expect 3 "eval without nvcc" eval relu.toml good.cu --arch sm_90a
KS_NVCC="$tmp/no-such-nvcc" expect 3 "a dry run without nvcc" run campaign.toml --dry-run
KS_NVCC="$tmp/no-such-nvcc" expect 3 "task check without nvcc" task check relu.toml

# 5: a damaged store: a skill memory whose data file was cut short (store_damage.sh covers the
# campaign's store, status, inspect and run).
KS_SKILLS_DIR="$src/skills" expect 0 "skills list on a new memory" skills list --memory mem
truncate -s $(($(stat -c %s mem/data.mdb) / 2)) mem/data.mdb
KS_SKILLS_DIR="$src/skills" expect 5 "skills list on a memory cut short" skills list --memory mem
grep -q "is damaged: it is" err || fail "skills list on a memory cut short: $(cat err)"

# 11: compile_error, nvcc's diagnostics naming the candidate's file and line.
{ cat good.cu; printf 'KS_FAKE_COMPILE_ERROR\n'; } >bad.cu
expect 11 "a candidate that does not compile" eval relu.toml bad.cu --arch sm_90a
lines=$(wc -l <good.cu)
grep -q "bad.cu:$((lines + 1)): error" err || fail "compile_error: diagnostics do not name bad.cu:$((lines + 1)): $(cat err)"
grep -q "kernel.cu" err && fail "compile_error: diagnostics still name kernel.cu: $(cat err)"

# 12..23: the worker fails that way while the candidate is verified (the third job: the
# device's info, the reference against itself, then the candidate), or at start (no_device).
scripted() {
  local code=$1 script=$2; shift 2
  KS_SCRIPT="$script" expect "$code" "eval, worker script '$script'" eval relu.toml good.cu \
    --arch sm_90a --worker "$worker" --cache-dir cache "$@"
}
scripted 12 "ok;ok;fail:load_error"
scripted 13 "ok;ok;fail:launch_error"
scripted 14 "ok;ok;fail:illegal_address"
scripted 15 "ok;ok;hang" --job-timeout 1
scripted 16 "ok;ok;fail:wrong_result"
scripted 17 "ok;ok;crash"
scripted 18 "ok;ok;fail:escaped_stream"
scripted 19 "fail:no_device"
scripted 20 "ok;ok;garbage"
# A worker that served jobs gets one more try on a fresh one (memory it held is not the job's),
# which carries on with the script (its position kept in a state file).
KS_SCRIPT_STATE="$PWD/oom.state" scripted 21 "ok;ok;fail:out_of_memory;fail:out_of_memory"
scripted 22 "ok;ok;fail:cuda_error"
scripted 23 "ok;ok;vendor"
grep -q "vendor_library.*libcublas.so.13" err || fail "vendor_library: the library is not named: $(cat err)"
# 24: host_fault: the device answered the info job and the reference's verification, then is
# unavailable. A worker killed from outside once is no failure at all: the job runs again on a
# fresh worker (the script's place kept across it); killed twice, the candidate crashed (17).
scripted 24 "ok;ok;lost"
grep -q "cudaErrorDevicesUnavailable" err || fail "host_fault: the CUDA error is not named: $(cat err)"
KS_SCRIPT_STATE="$tmp/killed.state" scripted 0 "ok;ok;killed" --no-time
KS_SCRIPT_STATE="$tmp/killed2.state" scripted 17 "ok;ok;killed;killed" --no-time
grep -q "the first time too" err || fail "killed twice: the first death is not named: $(cat err)"
# Allowed, the same candidate is measured and labelled; each job that loaded the library
# retires its worker, so the script's place is kept across the restarts.
KS_SCRIPT_STATE="$tmp/vendor.state" scripted 0 "ok;ok;vendor;vendor;vendor" --no-time \
  --allow-vendor-libraries
grep -q "the candidate uses cublas (/usr/local/cuda/lib64/libcublas.so.13)" out \
  || fail "eval --allow-vendor-libraries: no label: $(cat out err)"

# 130: an interrupted dry run, promptly, saying truthfully what it keeps.
# The stand-in for nvcc says it started (nvcc-started), then takes 5 s: the interrupt comes
# while it runs.
cat >slow_nvcc.sh <<SH
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" = --version ] && exec "$KS_NVCC" "\$@"; done
echo started >>"$tmp/nvcc-started"
sleep 5
exec "$KS_NVCC" "\$@"
SH
chmod +x slow_nvcc.sh
rm -f nvcc-started
KS_NVCC="$tmp/slow_nvcc.sh" "$ks" run campaign.toml --dry-run --progress 0 >out 2>err &
pid=$!
wait_for_file nvcc-started || fail "interrupted dry run: nvcc never started: $(cat out err)"
start=$(date +%s%N)
kill -INT "$pid"
wait "$pid"; rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
[ "$rc" -eq 130 ] || fail "interrupted dry run: exit $rc, wanted 130: $(cat out err)"
[ "$took_ms" -lt 2500 ] || fail "interrupted dry run: took $took_ms ms to stop (at most 2500)"
grep -q "a dry run saves no state" err || fail "interrupted dry run: does not say it saves no state: $(cat err)"
grep -q "state is saved" err && fail "interrupted dry run: claims a saved state: $(cat err)"
pgrep -f "$tmp/slow_nvcc.sh" >/dev/null && fail "interrupted dry run: left nvcc running"

# SIGTERM is a Ctrl-C too.
rm -f nvcc-started
KS_NVCC="$tmp/slow_nvcc.sh" "$ks" run campaign.toml --dry-run --progress 0 >out 2>err &
pid=$!
wait_for_file nvcc-started || fail "dry run stopped by SIGTERM: nvcc never started: $(cat out err)"
kill -TERM "$pid"
wait "$pid"; rc=$?
[ "$rc" -eq 130 ] || fail "dry run stopped by SIGTERM: exit $rc, wanted 130: $(cat out err)"

if [ "$failures" -ne 0 ]; then
  echo "exit_codes.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "exit_codes.sh: all checks passed"
