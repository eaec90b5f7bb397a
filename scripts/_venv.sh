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
