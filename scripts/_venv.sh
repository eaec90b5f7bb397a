# Sourced by the scripts: make a virtualenv and install the project into it.
# Usage: ensure_venv [--extras LIST] [--group NAME]...
#   ensure_venv --group dev          the project (editable) and the dev dependency group (tests, docs, tools)
#   ensure_venv --extras spark       the project with its spark extra (the demo)
# Dependency groups (PEP 735, [dependency-groups] in pyproject.toml) need pip >= 25.1; an older pip in the
# venv is upgraded first. $DELTALOG_VENV picks another venv directory, $PYTHON another base interpreter.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${DELTALOG_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

# pip_supports_groups PYTHON: whether that interpreter's pip knows `pip install --group` (pip >= 25.1)
pip_supports_groups() {
  "$1" - <<'PYEOF'
import sys
from importlib.metadata import version
major, minor = (int(p) for p in version("pip").split(".")[:2])
sys.exit(0 if (major, minor) >= (25, 1) else 1)
PYEOF
}

# make_venv DIR BASE_PYTHON: a virtualenv at DIR whose pip can install dependency groups
make_venv() {
  local dir="$1" base="$2"
  if [ ! -x "$dir/bin/python" ]; then
    "$base" -m venv "$dir"
  fi
  if ! pip_supports_groups "$dir/bin/python"; then
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
  fi
}

ensure_venv() {
  local extras="" groups=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --extras) extras="$2"; shift 2 ;;
      --group) groups+=(--group "$ROOT/pyproject.toml:$2"); shift 2 ;;
      *) echo "ensure_venv: unknown argument $1" >&2; return 2 ;;
    esac
  done
  make_venv "$VENV" "${PYTHON:-python3}"
  local spec="$ROOT"
  [ -n "$extras" ] && spec="$ROOT[$extras]"
  # The constraints file pins every package so pip resolves at once instead of backtracking.
  "$PY" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" -e "$spec" ${groups[@]+"${groups[@]}"}
}

# Azurite, the Azure Blob emulator the storage tests and `scripts/bench --store azure` run against (npm, into
# the git-ignored .azurite/; DELTALOG_AZURITE_BIN points elsewhere instead).
ensure_azurite() {
  local bin="${DELTALOG_AZURITE_BIN:-$ROOT/.azurite/node_modules/.bin/azurite-blob}"
  if [ ! -x "$bin" ]; then
    if command -v npm >/dev/null 2>&1; then
      npm install --prefix "$ROOT/.azurite" --no-audit --no-fund --loglevel=error azurite@3.35.0 >/dev/null
    else
      echo "npm not found: cannot install Azurite into .azurite/; the Azure storage tests will fail" >&2
    fi
  fi
}
