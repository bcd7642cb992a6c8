#!/usr/bin/env python3
"""Prints the build targets that a selection of tests runs, so that a build can make just those.

    ctest_targets.py SELECTED_BUILD TARGET_BUILD [CTEST ARGS...]

SELECTED_BUILD is a built tree (its GoogleTest binaries have listed their tests) in which
`ctest CTEST ARGS` selects the tests; every executable of that tree that a selected test starts
(directly, or named in an argument such as -DBENCH=/path) is mapped to its target name, and the
names that TARGET_BUILD (configured, e.g. with another MPI) also has are printed, with the
installed targets. .ci/run uses it for the MPICH tier, which runs only the mpi transport's
tests: building what they need takes a fraction of a whole build.
"""
import json
import os
import subprocess
import sys

INSTALLED = ["am", "am_lib", "am_aml", "am_mpix", "amrun"]  # cmake/am_install.cmake
# Reached by a test through its build directory, not a path: check_instructions.sh.
BY_BUILD_DIR = ["am_roundtrip_count"]


def selected_executables(build, ctest_args):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1", *ctest_args],
                         check=True, capture_output=True, text=True).stdout
    build = os.path.realpath(build)
    names = set()
    for test in json.loads(out)["tests"]:
        for arg in test.get("command", []):
            for part in arg.split("="):
                path = os.path.realpath(part) if os.path.isabs(part) else ""
                if (path.startswith(build + os.sep) and os.path.isfile(path)
                        and os.access(path, os.X_OK)):
                    names.add(os.path.basename(path))
    return names


def known_targets(build):
    out = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"], check=True,
                         capture_output=True, text=True).stdout
    return {line.split(":")[0] for line in out.splitlines() if line.endswith(": phony")}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    selected, target_build = sys.argv[1], sys.argv[2]
    wanted = selected_executables(selected, sys.argv[3:]) | set(INSTALLED) | set(BY_BUILD_DIR)
    print(" ".join(sorted(wanted & known_targets(target_build))))


if __name__ == "__main__":
    main()
