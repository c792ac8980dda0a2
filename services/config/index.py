"""The index build's settings: which MapReduce runner, the EMR cluster a build asks for,
PageRank, near-duplicates, and how many published segments are kept.

Read by ``nimbus index`` (``services.indexing``) and the tools that build an
index (demo, eval, benchmarks). Where an EMR build runs (roles, subnet) is the
deployment's: DeploySettings.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.config.errors import SettingsError


@dataclass(frozen=True)
class IndexSettings:
    mr_runner: str = "local"  # inline | local | emr
    mr_map_tasks: int = 0  # map tasks per job; 0: one per core (local), 64 (emr)
    # EMR index builds (`nimbus index --runner emr`): the cluster each build starts.
    emr_release_label: str = "emr-7.5.0"  # pinned: Hadoop 3.4 on Amazon Linux 2023
    emr_instance_type: str = "m6i.xlarge"
    emr_core_instances: int = 2
    # Index segments kept in the blob store after a publish: the active one and the ones
    # before it (a service still on the previous version keeps it); older ones are
    # deleted, with their index_versions rows. 0 keeps every segment.
    keep_segments: int = 2
    # `nimbus index daemon`: seconds between scheduled builds (counted from the last build
    # asked for, or the active index's publication); 0: only builds someone asks for.
    index_every: int = 86400
    # ... and between incremental updates (services.indexing.delta_build: what was committed
    # since the active index, published as a delta segment beside it) while no build runs; 0:
    # none. With the search service's 2 s recheck, a committed page is searchable within this
    # plus a delta's time.
    update_every: int = 30
    # The daemon's merge policy (services.indexing.merge_policy): the base and its deltas are
    # merged into one segment, in the background, once the version has this many deltas ...
    merge_deltas: int = 8
    # ... or its deltas hold (or removed) this share of the base's documents.
    merge_share: float = 0.10

    # Ranking computed at build time (query-time weights are in SearchSettings).
    near_duplicates: bool = True  # fold pages whose terms are >= 90 % the same (text/minhash.py)
    pagerank_damping: float = 0.85
    pagerank_tolerance: float = 1e-8
    pagerank_max_iterations: int = 100
    # memory: sparse power iteration in the build process (graphs that fit in
    # RAM: ~16 bytes per edge); mapreduce: one mrjob step per iteration.
    pagerank_engine: str = "memory"
    # page: PageRank over documents; host: over the host graph (links between
    # hosts), each document taking its host's score shared among the host's pages.
    pagerank_level: str = "page"

    def validate(self) -> None:
        if self.mr_runner not in {"inline", "local", "emr"}:
            raise SettingsError(
                f"NIMBUS_MR_RUNNER={self.mr_runner!r} is not a runner: use inline, local or emr"
            )
        if self.pagerank_engine not in {"memory", "mapreduce"}:
            raise SettingsError(f"NIMBUS_PAGERANK_ENGINE={self.pagerank_engine!r}: use memory or mapreduce")
        if self.keep_segments < 0:
            raise SettingsError(f"NIMBUS_KEEP_SEGMENTS={self.keep_segments}: use 0 (keep all) or more")
        if self.index_every < 0:
            raise SettingsError(
                f"NIMBUS_INDEX_EVERY={self.index_every}: use 0 (only on request) or more seconds"
            )
        if self.update_every < 0:
            raise SettingsError(
                f"NIMBUS_UPDATE_EVERY={self.update_every}: use 0 (no incremental updates) or more seconds"
            )
        if self.merge_deltas < 1:
            raise SettingsError(
                f"NIMBUS_MERGE_DELTAS={self.merge_deltas}: use 1 (merge after every delta) or more"
            )
        if self.merge_share <= 0.0:
            raise SettingsError(
                f"NIMBUS_MERGE_SHARE={self.merge_share}: use a share of the base's documents above 0 "
                "(0.10: merge once the deltas hold a tenth as many)"
            )
        if self.pagerank_level not in {"page", "host"}:
            raise SettingsError(f"NIMBUS_PAGERANK_LEVEL={self.pagerank_level!r}: use page or host")
        if not 0.0 < self.pagerank_damping < 1.0:
            raise SettingsError("NIMBUS_PAGERANK_DAMPING must lie strictly between 0 and 1")
