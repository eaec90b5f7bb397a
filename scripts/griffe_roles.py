"""A griffe extension for the documentation site: the docstrings' Sphinx roles as cross-references.

deltalog's docstrings name other objects the way Python's own tools read them (``:meth:`snapshot```,
``:class:`~deltalog.errors.StorageError```), which ``help()`` and editors show as they are. mkdocstrings renders
Markdown, where those roles would appear as literal ``:meth:`` text. This extension rewrites each role, when the
site is built, into an autorefs reference to the object it names: resolved as Python resolves the name where the
docstring is (the object's members, its class, its module and what the module imports, then the package), and
marked optional, so an object the site does not render (an internal module) shows as code instead of failing
the strict build. The source keeps one spelling; the site gets links.

Used by mkdocs.yml (``extensions``); tested by ``tests/integration/test_docs_site.py``.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

#: ``:role:`target``` and ``:role:`~target``` (``~`` shows the last name only); ``:py:role:`` too
ROLE = re.compile(r":(?:py:)?(?P<role>meth|func|class|exc|attr|mod|data|obj|const):`(?P<tilde>~?)(?P<target>[^`]+)`")
#: roles that name something called: shown with ``()`` as Sphinx shows them
CALLED = {"meth", "func"}


def _final(obj: Any, collection: Any, depth: int = 0) -> str | None:
    """The path ``obj`` finally names (an imported name followed to its definition), if it is in the package."""
    if depth > 8:
        return None
    if isinstance(obj, griffe.Alias):
        target = obj.target_path
        try:
            return _final(collection.get_member(target), collection, depth + 1)
        except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return target
    return str(obj.path)


def _member(scope: Any, dotted: str) -> Any:
    current = scope
    for part in dotted.split("."):
        members = getattr(current, "members", None)
        if members is None or part not in members:
            return None
        current = members[part]
        if isinstance(current, griffe.Alias):
            try:
                current = current.final_target
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                return members[part]
    return current


def resolve(name: str, where: Any, collection: Any) -> str | None:
    """The full path ``name`` means in the docstring of ``where``, or None."""
    name = name.strip().lstrip(".")
    scopes: list[Any] = []
    current = where
    while current is not None:
        scopes.append(current)
        current = current.parent
    for scope in scopes:
        found = _member(scope, name)
        if found is not None:
            return _final(found, collection)
    try:
        return _final(collection.get_member(name), collection)
    except (KeyError, ValueError, AttributeError):
        return None


def rewrite(text: str, where: Any, collection: Any) -> str:
    """``text`` with every role turned into an optional autorefs reference (or code when unresolved)."""

    def one(match: re.Match[str]) -> str:
        target = match["target"].strip()
        shown = target.rsplit(".", 1)[-1] if match["tilde"] else target.lstrip(".")
        if match["role"] in CALLED:
            shown += "()"
        code = f"<code>{html.escape(shown)}</code>"
        path = resolve(target, where, collection)
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles of every docstring of the package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        collection = loader.modules_collection
        stack: list[Any] = [pkg]
        seen: set[int] = set()
        while stack:
            obj = stack.pop()
            if id(obj) in seen or isinstance(obj, griffe.Alias):
                continue
            seen.add(id(obj))
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = rewrite(obj.docstring.value, obj, collection)
            stack.extend(obj.members.values())


__all__ = ["ROLE", "SphinxRoles", "resolve", "rewrite"]
