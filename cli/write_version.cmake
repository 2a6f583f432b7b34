# Writes the header that tells `kernelskill --version` which commit it was built from. Run by
# the build at every build (cmake -P), it rewrites OUTPUT only when the text changes, so that
# a new commit recompiles one file and an unchanged tree recompiles nothing.
#
# Variables: SOURCE_DIR (the source tree), OUTPUT (the header), GIT (git, may be empty).

set(commit "unknown")
set(dirty "")
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT}" rev-parse --short=12 HEAD
                  WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND head)
    set(commit "${head}")
    # Tracked files changed since the commit: the binary is not exactly that commit.
    execute_process(COMMAND "${GIT}" diff-index --quiet HEAD --
                    WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE changed ERROR_QUIET)
    if(changed EQUAL 1)
      set(dirty " with uncommitted changes")
    endif()
  endif()
endif()

set(text "#pragma once\n// Written by cli/write_version.cmake at build time; do not edit.\n#define KS_COMMIT \"${commit}${dirty}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
