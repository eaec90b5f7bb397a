# Sourced by the scripts: make a virtualenv and install the project into it.
# Usage: ensure_venv [--extras LIST] [--group NAME]...
#   ensure_venv --group dev          the project (editable) and the dev dependency group (tests, docs, tools)
#   ensure_venv --extras spark       the project with its spark extra (the demo)
# Installs go through uv (pinned in constraints.txt, bootstrapped into the venv by pip) and fall back to pip;
# dependency groups (PEP 735, [dependency-groups] in pyproject.toml) need pip >= 25.1, so an older pip in the
# venv is upgraded first when pip installs. $DELTALOG_VENV picks another venv directory, $PYTHON another base
# interpreter, DELTALOG_INSTALLER=pip skips uv.
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

# make_venv DIR BASE_PYTHON: a virtualenv at DIR (its pip is brought to >= 25.1 only if pip has to install)
make_venv() {
  local dir="$1" base="$2"
  if [ ! -x "$dir/bin/python" ]; then
    "$base" -m venv "$dir"
  fi
}

# ensure_uv: sets UV to the uv that installs into the venvs, pinned by constraints.txt and put into $VENV by
# its pip (one small wheel). uv resolves, downloads and installs the dev group in parallel, about a third
# faster than pip on a cold cache; the same constraints and groups go to either. Empty UV (uv could not be
# had, or DELTALOG_INSTALLER=pip) means plain pip.
ensure_uv() {
  UV=""
  [ "${DELTALOG_INSTALLER:-uv}" = pip ] && return 0
  make_venv "$VENV" "${PYTHON:-python3}"
  if [ ! -x "$VENV/bin/uv" ] &&
    ! "$PY" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" uv >/dev/null 2>&1; then
    echo "uv could not be installed into $VENV: installing with pip instead" >&2
    return 0
  fi
  UV="$VENV/bin/uv"
}

# install_into PYTHON ARGS...: pip-install ARGS (-c, -e, --group, wheels) into PYTHON's environment, with uv
# when ensure_uv found one, else (or if uv fails) with that environment's pip, upgraded for --group.
install_into() {
  local py="$1"
  shift
  if [ -n "${UV:-}" ]; then
    "$UV" pip install --quiet --python "$py" "$@" && return 0
    echo "uv pip install failed: retrying with pip" >&2
  fi
  if ! pip_supports_groups "$py"; then
    "$py" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
  fi
  "$py" -m pip install --quiet --disable-pip-version-check "$@"
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
  ensure_uv
  local spec="$ROOT"
  [ -n "$extras" ] && spec="$ROOT[$extras]"
  # The constraints file pins every package so the installer resolves at once instead of backtracking.
  install_into "$PY" -c "$ROOT/constraints.txt" -e "$spec" ${groups[@]+"${groups[@]}"}
}

# Azurite, the Azure Blob emulator the storage tests and `scripts/bench --store azure` run against (npm, into
# the git-ignored .azurite/; DELTALOG_AZURITE_BIN points elsewhere instead).
# Chromium, for scripts/site_check.py (the built docs site rendered headless): Debian's package, installed with
# apt-get when missing (root on a fresh machine, as CI is); elsewhere say what to install.
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
    return $?
  fi
  echo "chromium not found and not installable here (needs root and apt-get): install Debian's chromium" >&2
  return 1
}

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
