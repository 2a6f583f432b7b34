#!/usr/bin/env bash
# Builds one libFuzzer target of tests/fuzz/ with clang (ASan and UBSan, a signed overflow
# fails) and runs it for a bounded time on a copy of its corpus (tests/fuzz/corpus/NAME/).
# Usage: run_fuzzer.sh NAME SOURCE_DIR BUILD_DIR [SECONDS]   (KS_FUZZ_OPTIMIZE: -O0, -O1, ...)
# Exits 125 (ctest: skipped, with the reason) where clang or its libFuzzer runtime is missing
# (apt-get install clang libclang-rt-14-dev). A crash, a leak, a timeout of one input (10 s)
# or more than 2 GB of memory fails it; the input that did is kept in BUILD_DIR/fuzz/NAME/.
set -u
name=$1
src=$2
build=$3
seconds=${4:-5}
defines=""
optimize=${KS_FUZZ_OPTIMIZE:--O1}

case "$name" in
  expression) sources="engine/expression.cpp base/error.cpp" ;;
  elementwise) sources="engine/elementwise_expression.cpp config/spelling.cpp base/error.cpp" ;;
  mustache) sources="engine/mustache_limits.cpp" ;;
  json) sources="json/decode.cpp json/encode.cpp json/json_impl.cpp agents/model_protocol.cpp
                 base/text.cpp base/error.cpp" ;;
  config) sources="config/campaign_config.cpp config/config_text.cpp config/diagnostics.cpp
                   config/option_table.cpp config/spelling.cpp config/toml_source.cpp
                   base/text.cpp base/error.cpp"
          # NDEBUG as the product is built: toml++ 3.3 asserts on some malformed keys that
          # its release build refuses cleanly (corpus/config/c5-toml-assert). No sanitizer
          # ignore list: the code points on which toml++ 3.3 reaches __builtin_unreachable
          # (corpus/config/c6-toml-unreachable) are refused before it parses
          # (config/toml_source.hpp), so UBSan stops on any that gets through.
          defines="-DTOML_HEADER_ONLY=1 -DNDEBUG" ;;
  manifest) sources="engine/task_manifest.cpp engine/manifest_checks.cpp engine/graph_manifest.cpp
                     engine/module_manifest.cpp engine/task_warnings.cpp engine/task.cpp
                     engine/bench_memory.cpp engine/family_reference.cpp engine/graph_reference.cpp
                     engine/graph_spec.cpp $(cd "$src" && echo engine/op_family*.cpp)
                     engine/elementwise_expression.cpp
                     engine/expression.cpp engine/template_context.cpp engine/mustache_limits.cpp
                     engine/skill_library.cpp engine/skill_partials.cpp engine/skill_template.cpp engine/analyst.cpp
                     engine/diagnosis.cpp
                     config/diagnostics.cpp config/option_table.cpp config/spelling.cpp
                     config/toml_source.cpp base/text.cpp base/error.cpp"
            # As the config target.
            defines="-DTOML_HEADER_ONLY=1 -DNDEBUG"
            # The families' templates the manifests' references are rendered from.
            export KS_FAMILIES_DIR="$src/families"
            # 35 sources (every op family's file), several of them heavy (toml++, Mustache): -O0 halves their compile
            # (skill_template.cpp: 15 s instead of 34) for the test command's few seconds, at
            # the cost of runs a second (27 instead of 546): KS_FUZZ_OPTIMIZE=-O1 for a long run.
            optimize=${KS_FUZZ_OPTIMIZE:--O0} ;;
  records) sources="memory/record_codec.cpp memory/record_seal.cpp memory/json_text.cpp
                    memory/record_summary.cpp json/decode.cpp json/encode.cpp json/json_impl.cpp
                    engine/search_tree.cpp engine/short_term_memory.cpp engine/task_phase.cpp
                    engine/plan.cpp
                    base/text.cpp base/error.cpp" ;;
  *) echo "run_fuzzer.sh: unknown target '$name'" >&2; exit 2 ;;
esac

cxx=""
for candidate in clang++ clang++-14; do
  if command -v "$candidate" >/dev/null 2>&1; then cxx=$candidate; break; fi
done
if [ -z "$cxx" ]; then
  echo "SKIP: no clang++ (apt-get install clang libclang-rt-14-dev)"
  exit 125
fi

out="$build/fuzz/$name"
mkdir -p "$out"
probe="$build/fuzz/probe"
if [ ! -x "$probe" ]; then
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
    > "$build/fuzz/probe.cpp"
  if ! "$cxx" -fsanitize=fuzzer "$build/fuzz/probe.cpp" -o "$probe" 2>"$build/fuzz/probe.log"; then
    echo "SKIP: $cxx cannot link libFuzzer (apt-get install libclang-rt-14-dev): $(head -c 300 "$build/fuzz/probe.log")"
    exit 125
  fi
fi

binary="$out/${name}_fuzz"
inputs="$src/tests/fuzz/${name}_fuzz.cpp"
for s in $sources; do inputs="$inputs $src/$s"; done
# Rebuild only when a source, a header of ours or this script is newer than the binary, or
# the flags it was built with differ.
stale=1
if [ -x "$binary" ] && [ "$(cat "$binary.flags" 2>/dev/null)" = "$optimize $defines" ]; then
  stale=0
  for f in "$0" $inputs $(find "$src/base" "$src/engine" "$src/json" "$src/agents" "$src/config" "$src/memory" -name '*.hpp'); do
    if [ "$f" -nt "$binary" ]; then stale=1; break; fi
  done
fi
if [ "$stale" = 1 ]; then
  echo "building $binary"
  # One object per source, through ccache where it is installed (KS_CCACHE=0: not), so that
  # a fresh clone on a machine that built these sources before links without compiling.
  launcher=()
  if [ "${KS_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
    launcher=(env "CCACHE_BASEDIR=$src" CCACHE_NOHASHDIR=1 ccache)
  fi
  flags=(-std=c++20 -g "$optimize" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
         -DBOOST_JSON_NO_LIB -DBOOST_CONTAINER_NO_LIB $defines -I"$src")
  # The objects compile KS_FUZZ_JOBS at a time (default: the cores): on a fresh clone the
  # fuzz tests come last in ctest's order, with the cores otherwise idle.
  objects=()
  : >"$out/build.log"
  mkdir -p "$out/obj"
  rm -f "$out"/obj/*.failed
  jobs=${KS_FUZZ_JOBS:-$(nproc)}
  running=0
  for input in $inputs; do
    object="$out/obj/$(basename "${input%.cpp}").o"
    objects+=("$object")
    { "${launcher[@]}" "$cxx" "${flags[@]}" -c "$input" -o "$object" >"$object.log" 2>&1 ||
        echo "$input" >"$object.failed"; } &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
      wait -n
      running=$((running - 1))
    fi
  done
  wait
  for object in "${objects[@]}"; do
    cat "$object.log" >>"$out/build.log"
    if [ -e "$object.failed" ]; then
      cat "$object.log" >&2
      echo "FAIL: cannot build the $name fuzzer ($(cat "$object.failed"))" >&2
      rm -f "$object.failed"
      exit 1
    fi
  done
  if ! "$cxx" "${flags[@]}" "${objects[@]}" -o "$binary.tmp" >>"$out/build.log" 2>&1; then
    cat "$out/build.log" >&2
    echo "FAIL: cannot link the $name fuzzer" >&2
    exit 1
  fi
  mv "$binary.tmp" "$binary"
  echo "$optimize $defines" >"$binary.flags"
fi

# A copy of the corpus: what the run finds stays in the build folder, the repository's corpus
# changes only by hand.
work="$out/corpus"
rm -rf "$work"
mkdir -p "$work"
cp "$src/tests/fuzz/corpus/$name"/* "$work"/
cd "$out" || exit 1
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 "$work" 2>&1 | tail -n 25
status=${PIPESTATUS[0]}
if [ "$status" != 0 ]; then
  echo "FAIL: the $name fuzzer found an input that fails (exit $status); see crash-* in $out" >&2
  exit 1
fi
echo "ok: $name fuzzed for $seconds s without a failure"
