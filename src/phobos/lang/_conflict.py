"""A clear error when another distribution owns ``phobos/__init__.py``.

Every Phobos package lives in the ``phobos`` namespace package (PEP 420), which has no
``__init__.py``.  An unrelated project on PyPI is called ``phobos`` and ships one; installed
beside Phobos it makes ``phobos`` its own package, whose code then runs first on every
``phobos.*`` import.  Each Phobos package imports this module first, which runs ``check_namespace()``.  The
packages share no code, so each has this file; a test checks that the copies are identical.
"""

from __future__ import annotations

import sys
from importlib import metadata


class NamespaceConflict(ImportError):
    """Another distribution's ``phobos/__init__.py`` shadows the ``phobos`` namespace."""


def check_namespace() -> None:
    """Raise ``NamespaceConflict`` if ``phobos`` was imported from an ``__init__.py``."""
    phobos = sys.modules.get("phobos")
    init = getattr(phobos, "__file__", None)
    if init:
        raise NamespaceConflict(conflict_message(init))


def conflict_message(init: str) -> str:
    owner = _owner()
    who = f"{owner} owns it" if owner else "no installed distribution says it owns it"
    fix = (
        f"uninstall it (python -m pip uninstall {owner.split()[0]})"
        if owner
        else "delete that file"
    )
    return (
        f"phobos: error: {init} makes 'phobos' a regular package, but Phobos's packages "
        f"share the 'phobos' namespace, which has no __init__.py; {who}: {fix}. "
        "(Phobos itself installs as phobos-lang; see docs/install.md.)"
    )


def _owner() -> str | None:
    """'NAME VERSION' of the installed distribution that lists ``phobos/__init__.py``."""
    try:
        for dist in metadata.distributions():
            if any(str(f).replace("\\", "/") == "phobos/__init__.py" for f in dist.files or ()):
                return f"{dist.metadata['Name']} {dist.version}"
    except Exception:  # a broken distribution's metadata must not hide the real error
        return None
    return None


check_namespace()
