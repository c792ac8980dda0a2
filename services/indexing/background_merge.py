"""The indexer daemon's merges: one at a time, in a thread of their own, while the daemon's
loop goes on publishing deltas (``services.indexing.daemon``).

A merge (``incremental.update_index(..., deltas_only=True)``) folds the deltas of the version
active when it starts into its base; it takes minutes on a large index, and the deltas
published meanwhile are kept on top of the merged segment when it is published
(``publish.publish_segment``), so no commit waits for a merge. A full build that finished
meanwhile wins: the merge's ``SupersededError`` is reported, nothing else.

With the inline runner (tests, a developer's machine) the merge runs in the caller's thread:
that runner swaps the process's standard streams while a job runs, and two jobs at once in one
process would mix their outputs.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings
from services.errors import NimbusError
from services.indexing.errors import SupersededError
from services.indexing.incremental import UpdateResult
from services.indexing.merge_policy import should_merge
from services.indexing.publish import VersionRef
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.delta import DeltaDocs
from services.storage.formats.segment import read_meta
from services.storage.sql.index_versions import active_index

log = logging.getLogger(__name__)

Merge = Callable[..., UpdateResult]  # update_index's signature


class BackgroundMerge:
    """Starts a merge when the policy (``merge_policy``) says the active version is due, and
    reports its outcome at the next ``collect``. ``counters`` are the daemon's."""

    def __init__(
        self,
        settings: Settings,
        sessions: sessionmaker[Session],
        merge: Merge,
        say: Callable[[str], None],
        counters: Counter[str],
        wake: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.merge = merge
        self.say = say
        self.counters = counters
        self.wake = wake
        self.thread: threading.Thread | None = None
        self._outcomes: list[UpdateResult | BaseException] = []
        self._lock = threading.Lock()
        self._documents: dict[str, int] = {}  # segment -> documents (a base) or held + removed (a delta)

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start_if_due(self, settings: Settings) -> bool:
        """Start a merge of the active version if none runs and the policy says it is due;
        ``settings``: the merge's (its runner). Returns whether one started."""
        if self.running:
            return False
        with self.sessions() as session:
            version = active_index(session)
            ref = None if version is None else VersionRef.of(version)
        if ref is None or not ref.deltas:
            return False
        changed = sum(self._count(name) for name in ref.deltas)
        base = self._count(ref.segment)
        index = self.settings.index
        if not should_merge(
            len(ref.deltas), changed, base, max_deltas=index.merge_deltas, share=index.merge_share
        ):
            return False
        self.counters["merges_started"] += 1
        self.say(
            f"index merge started: version {ref.id}, {len(ref.deltas)} deltas holding or removing "
            f"{changed} documents of the base's {base}"
        )
        if settings.index.mr_runner == "inline":  # module docstring
            self._work(settings)
            return True
        self.thread = threading.Thread(target=self._work, args=(settings,), name="index-merge", daemon=True)
        self.thread.start()
        return True

    def collect(self) -> None:
        """Report the merges that ended since the last call (counters, log, ``say``)."""
        with self._lock:
            ended, self._outcomes = self._outcomes, []
        for outcome in ended:
            if isinstance(outcome, UpdateResult):
                self.counters["merges"] += 1
                self.say(
                    f"index merged: version {outcome.version_id} ({outcome.segment}), "
                    f"{outcome.num_docs} documents through commit seq {outcome.through_seq}, "
                    f"in {outcome.seconds:.1f} s"
                )
            elif isinstance(outcome, SupersededError):  # a build published meanwhile: it wins
                self.say(f"index merge not published: {outcome}")
            else:  # logged where it failed (_work)
                self.counters["merge_failures"] += 1
                self.say(f"index merge failed: {outcome}")

    def _work(self, settings: Settings) -> None:
        outcome: UpdateResult | BaseException
        try:
            outcome = self.merge(settings, progress=False, deltas_only=True)
        except SupersededError as exc:
            outcome = exc
        except Exception as exc:  # any failure: the served index stays; collect() counts it
            log.warning("index merge failed: %s", exc, exc_info=not isinstance(exc, NimbusError))
            outcome = exc
        with self._lock:
            self._outcomes.append(outcome)
        self.wake()

    def _count(self, segment: str) -> int:
        """A base's documents or a delta's held and removed ones, from its meta (read once:
        segments never change)."""
        if segment not in self._documents:
            store = open_blobstore(self.settings.blob_url, self.settings.aws_endpoint_url)
            meta = read_meta(lambda a, b: store.get(segment, a, b), segment)
            docs = DeltaDocs.from_meta(meta)
            held = int(meta["num_docs"]) if docs is None else docs.holds.shape[0] + docs.removed.shape[0]
            self._documents[segment] = held
        return self._documents[segment]
