#!/usr/bin/env python3
"""A wrong include fails the build, and says why (cmake/ks_component.cmake).

1. The check against the real components' rules (written by this build's configure step):
   an engine/ file that includes CAF, one that includes actors/, and a config/ file that
   includes engine/ are refused, each with FILE:LINE, what is not allowed and which line of
   which CMakeLists.txt says so; a file within engine/'s table passes.
2. The build of a throwaway project (tests/build/fixture/) made with the same CMake functions:
   it builds as it is; a component that includes CAF against its THIRD_PARTY line fails to
   build with the check's message; a component that includes the folder of a component its
   DEPS line does not name fails with the check's message, and, with the check turned off
   (KS_CHECK_INCLUDES=OFF), still fails, at compile time: its staged include root holds no
   such folder.

Usage: include_check_test.py SOURCE_DIR BINARY_DIR CMAKE GENERATOR MAKE_PROGRAM CXX_COMPILER
GENERATOR and MAKE_PROGRAM are the parent build's (CMAKE_GENERATOR, CMAKE_MAKE_PROGRAM), so the
fixture builds with the tool that built the tree: Ninja's or make.
"""

import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(condition, what, output=""):
    print(("ok:     " if condition else "FAILED: ") + what)
    if not condition:
        failures.append(what)
        if output:
            print("  output was:\n    " + output.replace("\n", "\n    "))


def run(command, cwd=None):
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    return done.returncode, done.stdout


def check_fixtures(source, binary):
    script = os.path.join(source, "cmake", "check_includes.py")
    fixtures = os.path.join(source, "tests", "build", "fixtures")
    rules = os.path.join(binary, "include-rules")

    def check_with(component, fixture):
        return run([sys.executable, script, os.path.join(rules, component + ".rules"),
                    "--files", os.path.join(fixtures, fixture)])

    rc, out = check_with("ks_engine", "engine_includes_caf.cpp")
    check(rc == 1 and "engine_includes_caf.cpp:4: #include <caf/all.hpp>: ks_engine may not "
          "include CAF: its THIRD_PARTY line (engine/CMakeLists.txt) allows" in out,
          "an engine/ file that includes <caf/all.hpp> is refused, with its file and line", out)
    rc, out = check_with("ks_engine", "engine_includes_actors.cpp")
    check(rc == 1 and "engine_includes_actors.cpp:2: #include \"actors/messages.hpp\": "
          "ks_engine may not include actors/ (ks_actors): it is not in its DEPS line "
          "(engine/CMakeLists.txt)" in out and "engine/task.hpp" not in out,
          "an engine/ file that includes actors/ is refused, and its own include is not", out)
    rc, out = check_with("ks_config", "config_includes_engine.cpp")
    check(rc == 1 and "config_includes_engine.cpp:3:" in out and
          "ks_config may not include engine/ (ks_engine)" in out and "base/error.hpp" not in out,
          "a config/ file may include base/ and nothing else of ours", out)
    rc, out = check_with("ks_engine", "engine_clean.cpp")
    check(rc == 0 and out == "",
          "an engine/ file within its table passes (includes in strings and comments are none)",
          out)


def build_fixture(source, cmake, generator, make_program, cxx, case, check_includes="ON"):
    work = tempfile.mkdtemp(prefix="ks-include-fixture-")
    try:
        rc, out = run([cmake, "-S", os.path.join(source, "tests", "build", "fixture"), "-B", work,
                       "-G", generator, "-DCMAKE_MAKE_PROGRAM=" + make_program,
                       "-DCMAKE_CXX_COMPILER=" + cxx, "-DKS_SOURCE_DIR=" + source,
                       "-DFIXTURE_CASE=" + case, "-DKS_CHECK_INCLUDES=" + check_includes])
        if rc != 0:
            return rc, "configure failed:\n" + out
        return run([cmake, "--build", work])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_builds(source, cmake, generator, make_program, cxx):
    rc, out = build_fixture(source, cmake, generator, make_program, cxx, "none")
    check(rc == 0 and "Checking the includes of ks_high" in out,
          "the fixture builds, its includes checked first", out)
    rc, out = build_fixture(source, cmake, generator, make_program, cxx, "third_party")
    check(rc != 0 and "bad_third_party/uses_caf.cpp:1: #include <caf/all.hpp>: "
          "ks_bad_third_party may not include CAF" in out and "uses_caf.cpp.o" not in out,
          "a component that includes CAF against its THIRD_PARTY line fails to build, "
          "before its files compile", out)
    rc, out = build_fixture(source, cmake, generator, make_program, cxx, "ours")
    check(rc != 0 and "bad_ours/uses_high.cpp:1: #include \"high/high.hpp\": ks_bad_ours may "
          "not include high/ (ks_high): it is not in its DEPS line (bad_ours/CMakeLists.txt), "
          "which reaches low/" in out,
          "a component that includes a folder its DEPS do not reach fails to build", out)
    rc, out = build_fixture(source, cmake, generator, make_program, cxx, "ours", check_includes="OFF")
    check(rc != 0 and "high/high.hpp" in out and "No such file" in out,
          "without the check, the staged include roots still make that include fail", out)


def main(argv):
    if len(argv) != 7:
        print(__doc__, file=sys.stderr)
        return 2
    source, binary, cmake, generator, make_program, cxx = argv[1:]
    check_fixtures(source, binary)
    check_builds(source, cmake, generator, make_program, cxx)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
