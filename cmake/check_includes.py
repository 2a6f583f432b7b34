#!/usr/bin/env python3
"""Checks that every #include of one component keeps to docs/architecture.md's table.

The build runs this once per component (and per program of ours) before compiling it:
cmake/ks_component.cmake writes a rules file at configure time and makes the target's objects
wait for this script's stamp, so a forbidden include fails the build with one line per
include: `FILE:LINE: #include <caf/all.hpp>: ks_engine may not include CAF ...`.

Two kinds of include are checked:

- Ours, `"engine/task.hpp"`: the first folder names a component (the longest registered
  folder that prefixes the path wins, so `gpu/worker/...` is the worker's, not ks_gpu's). A
  component may include its own folder and the folders of the components its DEPS line
  names, transitively (a header of a dependency includes that dependency's dependencies).
  A path with `..`, or one into a folder of ours that is no component (tests/), is refused.
  A quoted include found beside the including file is its own.
- Third-party, `<caf/all.hpp>`: each family (CAF, LMDB, CUDA, ...) is allowed only where the
  component's THIRD_PARTY line names it. Include directories cannot enforce this: these
  headers live in /usr/include, which every compile sees. An angle include that is neither a
  known family nor a standard C++, C or POSIX header is refused too, so that a new library is
  added to the table below (and to docs/architecture.md) rather than slipping in.

Directives are read with comments, string literals and raw strings skipped, so an `#include`
inside a generated CUDA source (a string) or a comment is no include. Every directive counts,
conditional or not: a forbidden include is forbidden on every configuration.

Usage: check_includes.py RULES [--stamp FILE] [--files FILE...]
  --files checks the given files under RULES instead of the files the rules list (the tests
  use it to check fixtures against a real component's rules).
"""

import os
import re
import sys

# -- the third-party families --------------------------------------------------------------
# name (as THIRD_PARTY lines write it) -> (what people call it, header patterns)
FAMILIES = {
    "expected": ("tl::expected", [r"tl/expected\.hpp$"]),
    "toml": ("toml++", [r"toml\+\+/"]),
    "mustache": ("Mustache (kainjow)", [r"kainjow/"]),
    "boost_json": ("Boost.JSON", [r"boost/json\.hpp$", r"boost/json/"]),
    "boost": ("Boost (other than Boost.JSON: Asio, Beast, ...)", [r"boost/"]),
    "caf": ("CAF", [r"caf/"]),
    "lmdb": ("LMDB", [r"lmdb\.h$"]),
    "curl": ("libcurl", [r"curl/"]),
    "cuda": ("CUDA",
             [r"cuda[a-z0-9_]*\.h$", r"cuda/", r"cub/", r"thrust/", r"cublas", r"cufft",
              r"curand", r"cusparse", r"cusolver", r"nvrtc\.h$", r"nvml\.h$", r"mma\.h$",
              r"device_launch_parameters\.h$", r"vector_types\.h$", r"driver_types\.h$"]),
    "cupti": ("CUPTI", [r"cupti"]),
    "xxhash": ("xxHash", [r"xxhash\.h$"]),
    "cli11": ("CLI11", [r"CLI/"]),
    "catch2": ("Catch2", [r"catch2/"]),
}
# The order they are tried in (patterns match from the path's start): Boost.JSON before the
# rest of Boost.
FAMILY_ORDER = ["expected", "toml", "mustache", "boost_json", "boost", "caf", "lmdb", "curl",
                "cupti", "cuda", "xxhash", "cli11", "catch2"]

# -- headers every component may include -----------------------------------------------------
CXX_STANDARD = set("""
algorithm any array atomic barrier bit bitset cassert cctype cerrno cfenv cfloat charconv chrono
cinttypes climits clocale cmath codecvt compare complex concepts condition_variable coroutine
csetjmp csignal cstdarg cstddef cstdint cstdio cstdlib cstring ctime cuchar cwchar cwctype deque
exception execution expected filesystem format forward_list fstream functional future
initializer_list iomanip ios iosfwd iostream istream iterator latch limits list locale map
memory memory_resource mutex new numbers numeric optional ostream queue random ranges ratio regex
scoped_allocator semaphore set shared_mutex source_location span sstream stack stdexcept
stop_token streambuf string string_view syncstream system_error thread tuple type_traits
typeindex typeinfo unordered_map unordered_set utility valarray variant vector version
""".split())
C_AND_POSIX = set("""
assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h locale.h math.h
setjmp.h signal.h stdalign.h stdarg.h stdatomic.h stdbool.h stddef.h stdint.h stdio.h stdlib.h
string.h tgmath.h time.h uchar.h wchar.h wctype.h
aio.h dirent.h dlfcn.h fcntl.h fnmatch.h glob.h grp.h iconv.h langinfo.h libgen.h netdb.h
poll.h pthread.h pwd.h regex.h sched.h semaphore.h spawn.h strings.h syslog.h termios.h
ucontext.h unistd.h utime.h wordexp.h execinfo.h cxxabi.h malloc.h link.h elf.h
""".split())
POSIX_FOLDERS = ("sys/", "netinet/", "arpa/", "net/", "linux/", "asm/")

DIRECTIVE = re.compile(r'\s*#\s*include\s*([<"])([^>"]*)[>"]')


def read_rules(path):
    rules = {"allow": [], "third_party": [], "exclude": [], "file": [], "component": {},
             "name": "", "folder": "", "root": "", "declared_in": ""}
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line.strip():
                continue
            key, _, value = line.partition(" ")
            if key == "component":
                folder, _, target = value.partition(" ")
                rules["component"][folder] = target
            elif key in ("allow", "third_party", "exclude", "file"):
                rules[key].append(value)
            else:
                rules[key] = value
    return rules


def directives(text):
    """Yields (line number, bracket, path) for each #include outside comments and literals."""
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        if at_line_start:
            end = text.find("\n", i)
            end = n if end < 0 else end
            m = DIRECTIVE.match(text, i, end)
            if m:
                yield line, m.group(1), m.group(2).strip()
                i = end
                continue
            at_line_start = False
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            close = text.find(")" + delimiter + '"', open_paren)
            end = n if open_paren < 0 or close < 0 else close + len(delimiter) + 2
            line += text.count("\n", i, end)
            i = end
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1


def owner(path, components):
    """Returns the registered folder that owns `path` (longest prefix), or None."""
    best = None
    for folder in components:
        if path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def family_of(path):
    for name in FAMILY_ORDER:
        if any(re.match(pattern, path) for pattern in FAMILIES[name][1]):
            return name
    return None


def check_file(path, rules, problems):
    name = rules["name"]
    where = rules["declared_in"]
    allowed = set(rules["allow"])
    third_party = set(rules["third_party"])
    components = rules["component"]
    root = rules["root"]
    shown = os.path.relpath(path, root) if path.startswith(root + os.sep) else path
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        problems.append(f"{shown}: cannot read it: {e.strerror}")
        return
    here = os.path.dirname(path)
    for line, bracket, include in directives(text):
        spelled = f"<{include}>" if bracket == "<" else f'"{include}"'

        def refuse(what):
            problems.append(f"{shown}:{line}: #include {spelled}: {what}")

        if ".." in include.split("/"):
            refuse(f"a path with '..' reaches around the component table; name the folder "
                   f"(\"engine/text.hpp\") so that {name}'s DEPS decide")
            continue
        beside = os.path.join(here, include)
        if bracket == '"' and os.path.exists(beside) and \
                owner(os.path.relpath(beside, root), components) in (None, rules["folder"]):
            continue  # beside the including file: its own
        folder = owner(include, components)
        if folder is not None:
            if folder not in allowed:
                mine = sorted(f for f in allowed if f != rules["folder"])
                refuse(f"{name} may not include {folder}/ ({components[folder]}): it is not in "
                       f"its DEPS line ({where}), which reaches "
                       f"{', '.join(f + '/' for f in mine) if mine else 'no component of ours'}")
            continue
        if "/" in include and os.path.isfile(os.path.join(root, include)):
            top = include.split("/")[0]
            refuse(f"{top}/ is no component a library may include (docs/architecture.md)")
            continue
        family = family_of(include)
        if family is not None:
            if family not in third_party:
                allowed_names = [FAMILIES[f][0] for f in FAMILY_ORDER if f in third_party]
                refuse(f"{name} may not include {FAMILIES[family][0]}: its THIRD_PARTY line "
                       f"({where}) allows "
                       f"{', '.join(allowed_names) if allowed_names else 'no third-party header'}"
                       f" (docs/architecture.md says what each folder may include)")
            continue
        if bracket == "<" and (include in CXX_STANDARD or include in C_AND_POSIX or
                               include.startswith(POSIX_FOLDERS)):
            continue
        if bracket == '"' and "/" not in include:
            refuse("no such file beside it; name the folder (\"engine/text.hpp\")")
            continue
        refuse("neither a standard, C or POSIX header nor a third-party family the check "
               "knows: add its family to cmake/check_includes.py and to the THIRD_PARTY line "
               "of the components that may use it")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    rules = read_rules(argv[1])
    stamp = None
    files = rules["file"]
    rest = argv[2:]
    while rest:
        if rest[0] == "--stamp" and len(rest) > 1:
            stamp, rest = rest[1], rest[2:]
        elif rest[0] == "--files":
            files, rest = rest[1:], []
        else:
            print(f"check_includes.py: unknown argument {rest[0]}", file=sys.stderr)
            return 2
    if stamp and os.path.exists(stamp):
        os.remove(stamp)  # a failed check must run again on the next build
    if files is rules["file"]:
        # A subfolder that is another target's (gpu/worker/) is checked under that target.
        files = [f for f in files
                 if owner(os.path.relpath(f, rules["root"]), rules["component"]) == rules["folder"]]
    problems = []
    for path in files:
        check_file(path, rules, problems)
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"{rules['name']}: {len(problems)} include(s) break the component table "
              f"(docs/architecture.md, cmake/check_includes.py)", file=sys.stderr)
        return 1
    if stamp:
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(f"{len(files)} files checked\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
