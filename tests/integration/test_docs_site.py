"""The documentation a new user meets first: the getting-started example runs as printed (and the README shows
the same one), the API reference lists the user's calls first and every public member once, and the site's
docstrings carry cross-references instead of literal ``:meth:`` role text (``scripts/griffe_roles.py``; the
rendered page itself is checked in a headless browser by ``scripts/site_check.py``, run by ``scripts/test``).
An integration test: it writes tables and needs the docs group (griffe), which the 3.10 unit run lacks."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import griffe
import pytest

from deltalog import DeltaLog, Snapshot

ROOT = Path(__file__).resolve().parents[2]
ROLE = re.compile(r":(?:py:)?(?:meth|func|class|exc|attr|mod|data|obj|const):`")


def python_block(text: str, heading: str) -> str:
    """The first fenced Python block after ``heading``."""
    after = text[text.index(heading) :]
    match = re.search(r"```python\n(.*?)```", after, re.S)
    assert match is not None, heading
    return match.group(1)


def run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docs>", "exec"), {"__name__": "__docs__"})
    return out.getvalue()


def test_the_getting_started_examples_run_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (ROOT / "docs" / "index.md").read_text()
    monkeypatch.chdir(tmp_path)
    printed = run(python_block(page, "## A first table"))
    assert printed.splitlines()[-3:] == ["2 DELETE", "1 WRITE", "0 WRITE"]
    assert DeltaLog.for_table(tmp_path / "sales").snapshot().version == 2
    assert "\n0\n" in printed  # the version time travel by timestamp found
    printed = run(python_block(page, "## For engine builders: the log itself"))
    assert printed.strip() == "0 ['day=2026-11-01/part-0.parquet']"


def test_the_readme_opens_with_the_same_example() -> None:
    readme = (ROOT / "README.md").read_text()
    page = (ROOT / "docs" / "index.md").read_text()
    assert python_block(readme, "## Quick start") == python_block(page, "## A first table")
    assert readme.index("## Quick start") < readme.index("## The log API, for engine builders")


def listed_members(api: str, name: str) -> list[str]:
    block = api[api.index(f"::: deltalog.{name}\n") :]
    block = block[block.index("members:\n") + len("members:\n") :]
    members = []
    for line in block.splitlines():
        if not line.strip().startswith("- "):
            break
        members.append(line.strip()[2:])
    return members


@pytest.mark.parametrize(
    ("cls", "first"),
    [
        (DeltaLog, ["for_table", "snapshot", "load_as_version", "history", "delete", "update", "merge", "vacuum"]),
        (Snapshot, ["to_pandas", "to_polars", "to_arrow", "scan", "version", "schema"]),
    ],
)
def test_the_api_reference_lists_the_users_calls_first_and_every_member_once(cls: type, first: list[str]) -> None:
    members = listed_members((ROOT / "docs" / "api.md").read_text(), cls.__name__)
    assert members[: len(first)] == first
    public = sorted(n for n in vars(cls) if not n.startswith("_"))
    assert sorted(members) == public  # a new member must be placed in the reference, once


def test_docstrings_reach_the_site_as_cross_references() -> None:
    extensions = griffe.load_extensions(f"{ROOT / 'scripts' / 'griffe_roles.py'}:SphinxRoles")
    package = griffe.load("deltalog", search_paths=[str(ROOT)], extensions=extensions, resolve_aliases=False)
    left = []
    stack = [package]
    while stack:
        obj = stack.pop()
        if isinstance(obj, griffe.Alias):
            continue
        if obj.docstring is not None and ROLE.search(obj.docstring.value):
            left.append(str(obj.path))
        stack.extend(obj.members.values())
    assert left == []
    create = package["log"]["DeltaLog"]["create"].docstring.value
    # a method of the same class, named by its short name, resolved where the docstring is
    assert '<autoref identifier="deltalog.log.DeltaLog.start_create" optional><code>start_create()</code>' in create
    # an error imported into the module, resolved to where it is defined
    assert '<autoref identifier="deltalog.errors.TableAlreadyExistsError" optional>' in create
