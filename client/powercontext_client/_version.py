"""The installed version, for `__version__`, `powercontext --version` and the User-Agent."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

# `pip install ./client` installs the client as powercontext-client; the monorepo's own install
# (the server with the client) is powercontext.
_DISTRIBUTIONS = ("powercontext-client", "powercontext")
# A source tree on sys.path without either installed: a PEP 440 version that sorts below any release.
FALLBACK = "0+unknown"


def installed_version() -> str:
    for name in _DISTRIBUTIONS:
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return FALLBACK


VERSION = installed_version()
