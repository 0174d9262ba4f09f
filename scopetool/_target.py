"""TARGET: ``module:attr`` or ``path/to/file.py:attr``, naming a Registry, a tool or a list of tools.

The one loader of the user's tools by name, shared by the command line and the MCP gateway's config.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TypeGuard, cast

from ._binding import Binding, Tool
from ._errors import DuplicateToolError, InvalidToolError
from ._registry import Registry

__all__ = ["TargetError", "load_object", "load_registry"]


class TargetError(Exception):
    """A TARGET that names nothing usable; its message is one line that says what and where.

    When the user's code raised (on import, or reading the attribute), that exception is its ``__cause__``.
    """


def _describe(error: BaseException) -> str:
    """``Type: message`` of the user's exception, on one line (the type alone when the message is empty).

    Where the user's code raised it follows, as ``(at path:line)``, when the traceback reaches that code.
    """
    text = " ".join(str(error).split())
    described = f"{type(error).__name__}: {text}" if text else type(error).__name__
    where = _where_raised(error)
    return f"{described} (at {where})" if where else described


def _where_raised(error: BaseException) -> str | None:
    """``path:line`` of the innermost frame of the user's own code in `error`'s traceback, or None.

    The user's code is what is neither scopetool, nor the import machinery, nor installed (the standard
    library, site-packages), unless the traceback holds nothing else (a TARGET in an installed package).
    A syntax error is where the parser found it. The path is relative to the current folder when under it.
    """
    import sysconfig  # noqa: PLC0415 - only a TARGET that raises needs them
    import traceback  # noqa: PLC0415

    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        return f"{_shown_path(error.filename)}:{error.lineno}"
    package = str(Path(__file__).resolve().parent) + os.sep
    installed = tuple(
        str(Path(sysconfig.get_path(kind)).resolve()) + os.sep
        for kind in ("stdlib", "platstdlib", "purelib", "platlib")
    )
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith("<") and not str(Path(frame.filename).resolve()).startswith(package)
    ]
    own = [frame for frame in frames if not str(Path(frame.filename).resolve()).startswith(installed)]
    chosen = own or frames
    return f"{_shown_path(chosen[-1].filename)}:{chosen[-1].lineno}" if chosen else None


def _shown_path(filename: str) -> str:
    path = Path(filename).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def load_registry(target: str) -> Registry:
    """The registry TARGET names, built from a tool or a list of tools where needed.

    The target is loaded as `load_object` loads it.

    Raises:
        TargetError: the target is malformed, cannot be imported, lacks the attribute, or is not a
            Registry, a tool or a list of tools (or its tools cannot be registered together).
    """
    return _registry(load_object(target), target)


def load_object(target: str) -> object:
    """The object TARGET (``module:attr`` or ``path/to/file.py:attr``) names.

    A file target is loaded as a module whose directory is put first on ``sys.path`` (so its sibling
    imports work); a module target is imported with the current directory on ``sys.path``.

    Raises:
        TargetError: the target is malformed, cannot be imported, or lacks the attribute.
    """
    location, colon, attribute = target.rpartition(":")
    if not colon or not location or not all(part.isidentifier() for part in attribute.split(".")):
        raise TargetError(f"TARGET {target!r} must be module:attr or path/to/file.py:attr")
    if location.endswith(".py") or "/" in location or os.sep in location:
        module = _load_file(location)
    else:
        module = _import(location)
    value: object = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise TargetError(f"{location!r} has no attribute {attribute!r}") from None
        except Exception as error:  # a property or __getattr__ of the user's may raise anything
            raise TargetError(f"reading {attribute!r} of {location!r} raised {_describe(error)}") from error
    return value


def _load_file(location: str) -> ModuleType:
    path = Path(location)
    if not path.is_file():
        raise TargetError(f"cannot load {location!r}: no such file")
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = path.stem if path.stem.isidentifier() and path.stem not in sys.modules else "_scopetool_target"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot load {location!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # registered first, as an import would: pydantic resolves annotations through it
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # the user's module may raise anything while it runs
        del sys.modules[name]
        raise TargetError(f"importing {location!r} raised {_describe(error)}") from error
    return module


def _import(location: str) -> ModuleType:
    directory = os.getcwd()
    if directory not in sys.path:
        sys.path.insert(0, directory)
    try:
        return importlib.import_module(location)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing and (location == missing or location.startswith(missing + ".")):
            raise TargetError(f"no module named {missing!r} (looked in the current directory and sys.path)") from None
        raise TargetError(f"importing {location!r} raised {_describe(error)}") from error
    except (Exception, SystemExit) as error:  # the user's module may raise anything while it runs
        raise TargetError(f"importing {location!r} raised {_describe(error)}") from error


def _registry(value: object, target: str) -> Registry:
    if isinstance(value, Registry):
        return value
    listed = isinstance(value, list | tuple)
    items = list(cast("list[object] | tuple[object, ...]", value)) if listed else [value]
    tools: list[Binding | Tool] = []
    for index, item in enumerate(items):
        if not _is_tool(item):
            hint = " (decorate the function with @scopetool.tool)" if callable(item) else ""
            what = (
                f"{target!r}[{index}] must be a tool"
                if listed
                else f"{target!r} must name a Registry, a tool or a list of tools"
            )
            raise TargetError(f"{what}, not {type(item).__name__}{hint}")
        tools.append(item)
    try:
        return Registry(*tools)
    except (InvalidToolError, DuplicateToolError) as error:  # binding reports what a definition() raised
        raise TargetError(f"{target!r}: {error}") from None


def _is_tool(item: object) -> TypeGuard[Binding | Tool]:
    """Whether `item` is a Binding or a tool; an object whose attributes raise when looked at is not."""
    try:
        return isinstance(item, Binding | Tool)
    except Exception:  # noqa: BLE001 - the Tool check reads the object's attributes, which may raise anything
        return False
