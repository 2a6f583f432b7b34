#!/usr/bin/env python3
"""clang-tidy over our translation units, each skipped when a clean result for the same content
is cached: the engine of the ctest "lint: clang-tidy finds nothing" (tests/lint/check_tidy.sh).

The key of a translation unit is what clang-tidy's verdict depends on: the clang-tidy version,
every .clang-tidy of the repository, the file's path in the repository, and, for each of its
compile commands, the command's flags and the file as the preprocessor expands it (clang++ -E
with those flags: every header it reaches, ours, CAF's, Catch2's and the standard library's,
with the line markers that say which are system headers). The checkout's and the build's
absolute paths are replaced by placeholders in both, so that another clone of the same content
reuses the result. Only clean results are cached (an empty file per key); a finding is
reported again on every run until it is fixed. Preprocessing a file costs about a tenth of
checking it; a file whose preprocessing fails is checked every time.

Usage: tidy_cached.py SOURCE_DIR BUILD_DIR CLANG_TIDY CLANG_XX FOLDER_REGEX CACHE_DIR JOBS
                      [EXCLUDE_REGEX [SHARD]]
The files are our .cpp files under the folders FOLDER_REGEX matches (relative to SOURCE_DIR),
less those under the folders EXCLUDE_REGEX matches; a SHARD "I/N" keeps the I-th of every N
of them in path order (1/2: the first, third, ...). CACHE_DIR may be "none": then every file
is checked and nothing is written.
"""

import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

FORMAT = "kernelskill-tidy-cache 1"
# Entries no run has used for this long are removed (every hit refreshes its entry's time).
PRUNE_DAYS = 30
CHATTER = re.compile(r"^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ "
                     r"warnings|^Use -header-filter=|^Error while processing ")


def command_args(entry):
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry["command"])


def preprocess_args(args, clangxx):
    """The compile command as a clang++ -E command: no output file, no dependency files."""
    out = [clangxx]
    skip_next = False
    for a in args[1:]:
        if skip_next:
            skip_next = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip_next = True
            continue
        if a in ("-c", "-MD", "-MMD") or a.startswith("-o"):
            continue
        out.append(a)
    return out + ["-E"]


def normalize(text, source, build):
    # The build folder may lie inside the checkout: replace the longer prefix first.
    for path, tag in sorted(((build, "@BUILD@"), (source, "@SOURCE@")), key=lambda p: -len(p[0])):
        text = text.replace(path, tag)
    return text


class Checker:
    def __init__(self, source, build, tidy, clangxx, cache):
        self.source, self.build, self.tidy, self.clangxx, self.cache = (source, build, tidy,
                                                                        clangxx, cache)
        version = subprocess.run([tidy, "--version"], capture_output=True, text=True).stdout
        configs = []
        for root, dirs, files in os.walk(source):
            dirs[:] = [d for d in dirs if not d.startswith(".") and
                       os.path.join(root, d) != build]
            if ".clang-tidy" in files:
                path = os.path.join(root, ".clang-tidy")
                with open(path, "rb") as f:
                    configs.append((os.path.relpath(path, source), f.read()))
        h = hashlib.sha256()
        for field in [FORMAT, version] + [f"{p}\0{c.decode(errors='replace')}"
                                           for p, c in sorted(configs)]:
            h.update(f"{len(field)}:".encode() + field.encode())
        self.base = h.digest()

    def key(self, path, entries):
        """The content key of `path`, or None where the preprocessor fails."""
        h = hashlib.sha256(self.base)
        rel = os.path.relpath(path, self.source)
        h.update(f"file:{len(rel)}:{rel}".encode())
        commands = []
        for entry in entries:
            args = command_args(entry)
            flags = normalize(shlex.join(a for a in args[1:] if a != path), self.source,
                              self.build)
            commands.append((flags, entry))
        for flags, entry in sorted(commands, key=lambda c: c[0]):
            h.update(f"flags:{len(flags)}:{flags}".encode())
            run = subprocess.run(preprocess_args(command_args(entry), self.clangxx),
                                 cwd=entry["directory"], capture_output=True)
            if run.returncode != 0:
                return None
            text = normalize(run.stdout.decode(errors="replace"), self.source, self.build)
            h.update(f"expanded:{len(text)}:".encode() + text.encode())
        return h.hexdigest()

    def entry_path(self, key):
        return os.path.join(self.cache, key[:2], key)

    def cached(self, key):
        if self.cache is None or key is None:
            return False
        path = self.entry_path(key)
        try:
            os.utime(path)
            return True
        except OSError:
            return False

    def remember(self, key, rel):
        if self.cache is None or key is None:
            return
        path = self.entry_path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}-{time.monotonic_ns()}"
        with open(tmp, "w") as f:
            f.write(rel + "\n")
        os.replace(tmp, path)

    def check(self, path, entries):
        """Returns (ok, from_cache, output, seconds) for one translation unit."""
        start = time.monotonic()
        key = self.key(path, entries)
        if self.cached(key):
            return True, True, "", time.monotonic() - start
        run = subprocess.run([self.tidy, "-p", self.build, "-quiet", path], capture_output=True,
                             text=True, errors="replace")
        text = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)
        lines = [l for l in text.splitlines() if not CHATTER.search(l)]
        ok = run.returncode == 0 and not any(": warning: " in l or ": error: " in l for l in lines)
        if ok:
            self.remember(key, os.path.relpath(path, self.source))
        return ok, False, "\n".join(lines), time.monotonic() - start


def prune(cache):
    limit = time.time() - PRUNE_DAYS * 86400
    for root, _, files in os.walk(cache):
        for name in files:
            path = os.path.join(root, name)
            try:
                if os.stat(path).st_mtime < limit:
                    os.remove(path)
            except OSError:
                pass


def main():
    if len(sys.argv) not in (8, 9, 10):
        print(__doc__, file=sys.stderr)
        return 2
    source, build = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    tidy, clangxx, folders, cache, jobs = sys.argv[3:8]
    cache = None if cache == "none" else os.path.join(cache, "tidy")
    start = time.monotonic()
    with open(os.path.join(build, "compile_commands.json")) as f:
        database = json.load(f)
    wanted = re.compile("^" + re.escape(source) + "/(" + folders + r")/.*\.cpp$")
    unwanted = (re.compile("^" + re.escape(source) + "/(" + sys.argv[8] + ")/")
                if len(sys.argv) >= 9 and sys.argv[8] else None)
    shard, shards = 1, 1
    if len(sys.argv) == 10 and sys.argv[9]:
        shard, shards = (int(n) for n in sys.argv[9].split("/"))
    units = {}
    for entry in database:
        path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        if path.startswith(build + os.sep):
            continue  # generated
        if wanted.match(path) and not (unwanted and unwanted.match(path)):
            units.setdefault(path, []).append(entry)
    units = {p: e for i, (p, e) in enumerate(sorted(units.items())) if i % shards == shard - 1}
    checker = Checker(source, build, tidy, clangxx, cache)
    failed, hits, times = [], 0, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
        futures = {pool.submit(checker.check, p, e): p for p, e in sorted(units.items())}
        for future in concurrent.futures.as_completed(futures):
            ok, hit, output, seconds = future.result()
            hits += hit
            if not hit:
                times.append((seconds, os.path.relpath(futures[future], source)))
            if output.strip():
                print(output, flush=True)
            if not ok:
                failed.append(os.path.relpath(futures[future], source))
    if cache is not None:
        prune(cache)
    took = round(time.monotonic() - start)
    cached = f", {hits} of them clean in the cache" if cache is not None else ""
    slowest = ", ".join(f"{path} {seconds:.0f} s" for seconds, path in sorted(times)[::-1][:5])
    if slowest:
        print(f"check_tidy: the slowest checked: {slowest}")
    if failed:
        print(f"check_tidy: clang-tidy found something in {len(failed)} of {len(units)} files "
              f"({took} s{cached}): {' '.join(sorted(failed))}")
        return 1
    print(f"check_tidy: clang-tidy finds nothing in {len(units)} files ({took} s{cached})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
