"""One typed settings object, read from the environment once and passed in.

Every backend is a URL (database, blob store), so the embedded defaults, moto
and AWS differ only in configuration. Nothing below ``services`` reads
``os.environ`` itself: components take a ``Settings`` (or the few values they
need) as arguments.

``Settings`` (``settings.py``) keeps the backends at its top and one frozen
section per part of the system, each in its own module with its validation:

- ``crawl``: ``CrawlSettings``, politeness, limits, scope, partitions, content blocks;
- ``search``: ``SearchSettings``, query-time ranking and the search service;
- ``index``: ``IndexSettings``, the MapReduce runner, build-time ranking, kept segments;
- ``deploy``: ``DeploySettings``, what a deployed stack hands its processes.

A setting's variable is its field's name, whatever its section
(``settings.crawl.max_pages`` is ``NIMBUS_MAX_PAGES``: ``env.py``).
"""

from services.config.crawl import DEFAULT_USER_AGENT, CrawlSettings
from services.config.deploy import DeploySettings
from services.config.errors import SettingsError
from services.config.index import IndexSettings
from services.config.search import SearchSettings
from services.config.settings import Settings

__all__ = [
    "DEFAULT_USER_AGENT",
    "CrawlSettings",
    "DeploySettings",
    "IndexSettings",
    "SearchSettings",
    "Settings",
    "SettingsError",
]
