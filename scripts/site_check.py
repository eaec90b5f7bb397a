"""The built documentation site as a reader sees it: headless Chromium renders the start page and the API page,
takes a screenshot of the start page, and the rendered text is checked for what must not be there.

Run by ``scripts/test`` after the docs build (``scripts/site_check SITE_DIR``). Checks, each failing the run:

* the start page renders (its DOM has the "Getting started" title and the first example) and its screenshot is
  a real picture (a PNG of some size, not a blank page);
* no page shows literal Sphinx role markup (``:meth:`x```, ``:class:`...``): the docstrings' roles must have
  become cross-references (``scripts/griffe_roles.py``), and the API page holds such links.

Chromium is Debian's (``/usr/bin/chromium``; ``scripts/test`` installs it when missing), started with the flags
this sandbox needs: no sandbox as root, no GPU, and nothing that reaches for the network.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
ROLE = re.compile(r":(?:py:)?(?:meth|func|class|exc|attr|mod|data|obj|const):`")
#: a rendered page of text is tens of kilobytes as PNG; a blank or failed render is a few hundred bytes
MIN_SCREENSHOT_BYTES = 20_000
TIMEOUT_S = 120


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("site_check: no chromium found (scripts/test installs Debian's chromium package)")


def browse(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on ``page`` with a fresh profile."""
    with tempfile.TemporaryDirectory(prefix="site-check-profile-") as profile:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )


def dom(page: Path) -> str:
    run = browse(page, "--dump-dom")
    if run.returncode != 0 or "<html" not in run.stdout:
        sys.exit(f"site_check: chromium could not render {page}: {run.stderr.strip()[-500:]}")
    return run.stdout


def text_of(html: str) -> str:
    """What a reader sees: the markup without tags, scripts and styles."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S | re.I)
    return re.sub(r"<[^>]+>", " ", html)


def main(site: Path) -> list[str]:
    problems = []
    start, api = site / "index.html", site / "api" / "index.html"
    for page in (start, api):
        if not page.is_file():
            problems.append(f"{page} was not built")
    if problems:
        return problems
    start_dom = dom(start)
    if "Getting started" not in start_dom or "deltalog.write(sales" not in text_of(start_dom).replace("&quot;", '"'):
        problems.append(f"{start}: the rendered start page lacks its title or its first example")
    api_dom = dom(api)
    for page, html in ((start, start_dom), (api, api_dom)):
        shown = ROLE.findall(text_of(html))
        if shown:
            problems.append(f"{page}: {len(shown)} literal role(s) shown, e.g. {shown[0]!r}")
    if api_dom.count('class="autorefs autorefs-internal"') < 20:
        problems.append(f"{api}: the docstrings' cross-references are not links")
    shot = site.parent / "site-start.png"
    shot.unlink(missing_ok=True)
    run = browse(start, f"--screenshot={shot}", "--window-size=1280,1600")
    size = shot.stat().st_size if shot.is_file() else 0
    if run.returncode != 0 or size < MIN_SCREENSHOT_BYTES:
        problems.append(f"screenshot of {start}: {size} bytes ({run.stderr.strip()[-300:]})")
    elif shot.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        problems.append(f"screenshot of {start} is not a PNG")
    else:
        print(f"site_check: {start} rendered, no role markup on the start and API pages; {shot}: {size} bytes")
    return problems


if __name__ == "__main__":
    found = main(Path(sys.argv[1] if len(sys.argv) > 1 else "build/site").resolve())
    for problem in found:
        print(f"site_check: {problem}", file=sys.stderr)
    sys.exit(1 if found else 0)
