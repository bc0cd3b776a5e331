#!/usr/bin/env bash
# Mutation testing of the machine (the modules only_mutate lists in tests/mutation/mutmut.toml) with mutmut, against the module as Python source (docs/project/reliability.md).
#
#   tests/mutation/run.sh [WORKDIR]      # default /tmp/streamfsm-mutation; JOBS=n sets the workers (default: cores)
#
# Clones the committed HEAD of this repository into WORKDIR (the checkout itself is not touched), installs it there
# with STREAMFSM_PURE=1 (no compiled .so: mutmut mutates the .py) into WORKDIR/.venv with mutmut, appends
# tests/mutation/mutmut.toml to the clone's pyproject.toml and runs `mutmut run`. Then, in WORKDIR:
# `.venv/bin/mutmut results` lists the survivors, `.venv/bin/mutmut show NAME` shows one, and
# `.venv/bin/mutmut run NAME...` runs some again. About two and a half hours on 2 cores from scratch; run again
# in the same WORKDIR (after `git pull` there), mutmut 3 runs only the mutants of functions that changed.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-/tmp/streamfsm-mutation}"
rm -rf "$work"
git clone -q "$repo" "$work"
cd "$work"
rm -f streamfsm/*.so
cat tests/mutation/mutmut.toml >> pyproject.toml
python3 -m venv .venv
.venv/bin/pip install -q -U pip
STREAMFSM_PURE=1 .venv/bin/pip install -q -e '.[test]' 'mutmut==3.8.1'
.venv/bin/mutmut run --max-children "${JOBS:-$(nproc)}"
.venv/bin/mutmut results
