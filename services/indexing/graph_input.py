"""The link graph's input: the manifest's parts with the name lines dealt among them.

MRLinkGraph reads the manifest (record blocks) and the name lines (``url_names``). Each gzip
file is one map task on every runner, so the name lines in a file of their own were a map
task of their own: on the local runner it started after the manifest's tasks had filled both
cores and ran alone, a core idle, about 1 s of a 100,000-document build
(docs/performance-notes.md). Dealt in contiguous runs over the manifest's parts, they add a
few lines to each task and no task; the join does not depend on which task announced what.
"""

from __future__ import annotations

import gzip
import shutil
from itertools import islice
from pathlib import Path


def graph_input(manifest: list[Path], names: Path, num_names: int, directory: Path) -> list[Path]:
    """Files holding each manifest part's lines, then its share of the ``num_names`` lines of
    ``names`` (gzip, as ``url_names.write_name_lines`` writes them; ``num_names`` is how it
    counted them), written in ``directory`` (``graph-*.txt.gz``). No name lines, or no
    manifest: the inputs as they are."""
    if not num_names or not manifest:
        return [*manifest, names] if num_names else list(manifest)
    paths = [directory / f"graph-{i:05d}.txt.gz" for i in range(len(manifest))]
    last = len(manifest) - 1
    with gzip.open(names, "rb") as lines:
        for i, (part, path) in enumerate(zip(manifest, paths, strict=True)):
            # The last part takes whatever is left, should the count be short.
            share = None if i == last else (i + 1) * num_names // len(paths) - i * num_names // len(paths)
            with gzip.open(part, "rb") as src, gzip.open(path, "wb", compresslevel=1) as out:
                shutil.copyfileobj(src, out)
                out.writelines(islice(lines, share))
    return paths
