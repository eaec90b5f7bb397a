# Sourced by the scripts: make .venv (Python >= 3.10) and install the project into it.
# Usage: ensure_venv [extra ...]   e.g. ensure_venv dev
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${DELTALOG_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

ensure_venv() {
  local extras="${1:-}"
  if [ ! -x "$PY" ]; then
    local base="${PYTHON:-python3}"
    "$base" -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
  fi
  local spec="$ROOT"
  [ -n "$extras" ] && spec="$ROOT[$extras]"
  # The constraints file pins every package so pip resolves at once instead of backtracking.
  "$PY" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" -e "$spec"
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
