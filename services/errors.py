"""The root of every error Nimbus raises on purpose.

Each package has its own root below this one (``StorageError``,
``CrawlerError``, ``SearchError``, ...), in a module named ``errors``, as
httpx does: callers catch a package's root, and the edges (the ``nimbus``
command's exit codes and messages, the web service's status codes) translate
them once. Messages say what went wrong with which input and what to do.
"""

from __future__ import annotations


class NimbusError(Exception):
    """Something Nimbus cannot do as asked; the message names the input and the fix."""

    # The ``nimbus`` command's exit status for it: 1 for a failure, 2 for bad input
    # (a malformed setting, argument or file), as argparse and most Unix tools do.
    exit_code = 1
