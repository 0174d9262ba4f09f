"""A Griffe extension for the API reference: it shows what users call, and nothing else.

With ``filters: public`` (mkdocs.yml) a module shows the names in its ``__all__``, Griffe's own rule;
this extension drops every underscored member of every class (but ``__init__``, whose signature and
parameters the class heading shows): private attributes, dunder methods (their behaviour is documented
on the class) and helpers of the C fast path. ``tests/test_docs.py`` checks the built pages for known
internal names.
"""

from __future__ import annotations

from typing import Any

import griffe


def _drop_underscored(node: griffe.Object) -> None:
    for name, member in list(node.members.items()):
        if member.is_alias:
            continue  # an import: documented, and pruned, where it is defined
        if member.is_class or member.is_module:
            _drop_underscored(member)  # type: ignore[arg-type]
        if node.is_class and name.startswith("_") and name != "__init__":
            node.del_member(name)


class PublicSurface(griffe.Extension):
    """Drop the underscored members of every class of a package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Prune `pkg`'s classes, in every module, at any depth."""
        _drop_underscored(pkg)
