# Sourced by the CLI tests: waits for the marker a step is about to act on (a line a program
# printed, a file a stand-in wrote), never for a guessed number of seconds, so that a loaded
# machine makes a test slower, not wrong. Each polls every 50 ms up to a bound (default 120 s).

# wait_for_lines FILE REGEX [COUNT] [SECONDS] [PID]: waits until FILE holds COUNT (default 1)
# lines matching the extended REGEX; returns 1 after SECONDS, or as soon as PID (if given) has
# ended without them.
wait_for_lines() {
  local file=$1 regex=$2 count=${3:-1} seconds=${4:-120} pid=${5:-} n
  local deadline=$((SECONDS + seconds))
  for (( ; ; )); do
    n=$(grep -cE -- "$regex" "$file" 2>/dev/null)
    [ "${n:-0}" -ge "$count" ] && return 0
    [ "$SECONDS" -lt "$deadline" ] || return 1
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      n=$(grep -cE -- "$regex" "$file" 2>/dev/null)
      [ "${n:-0}" -ge "$count" ]
      return
    fi
    sleep 0.05
  done
}

# wait_for_file FILE [SECONDS]: waits until FILE exists and is not empty; returns 1 after SECONDS.
wait_for_file() {
  local file=$1 seconds=${2:-120}
  local deadline=$((SECONDS + seconds))
  until [ -s "$file" ]; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
