#!/usr/bin/env bash
# Ctrl-C during a real campaign on a GPU host: the quickstart campaign, SIGINT after AFTER
# seconds (default 12), the time to exit and what it says, `status`, then the same command again
# to resume.   scripts/gpu-interrupt.sh [DIST]
dist=$(realpath "${1:-dist}")
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
rm -rf /tmp/ks-ctrlc; mkdir -p /tmp/ks-ctrlc
sed -e 's|^output = .*|output = "/tmp/ks-ctrlc/out"|' -e "s|\"\.\./tasks/|\"$PWD/tasks/|" \
    -e 's|^path = .*|path = "/tmp/ks-ctrlc/memory"|' configs/quickstart.toml > /tmp/ks-ctrlc/c.toml
grep -q '^\[memory\]' /tmp/ks-ctrlc/c.toml || printf '\n[memory]\npath = "/tmp/ks-ctrlc/memory"\n' >> /tmp/ks-ctrlc/c.toml
"$dist/bin/kernelskill" run /tmp/ks-ctrlc/c.toml --progress 2 > /tmp/ks-ctrlc/run.out 2> /tmp/ks-ctrlc/run.err &
pid=$!
sleep "${AFTER:-12}"
t0=$(date +%s.%N); kill -INT $pid; wait $pid; rc=$?; t1=$(date +%s.%N)
echo "exit $rc, $(python3 -c "print(round($t1-$t0,2))") s after SIGINT"
tail -6 /tmp/ks-ctrlc/run.err; tail -3 /tmp/ks-ctrlc/run.out
"$dist/bin/kernelskill" status /tmp/ks-ctrlc/out | tail -12
t0=$(date +%s.%N); "$dist/bin/kernelskill" run /tmp/ks-ctrlc/c.toml --progress 0 > /tmp/ks-ctrlc/resume.out 2>&1; rc=$?; t1=$(date +%s.%N)
echo "resume exit $rc in $(python3 -c "print(round($t1-$t0,1))") s"; tail -14 /tmp/ks-ctrlc/resume.out
