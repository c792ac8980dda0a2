"""BM25F term weights ("impacts"), computed once at publish time. Pure numpy.

The text score of a document for a query is a sum over query terms of
``query_weight_t * impact_td`` (docs/ranking.md), where

    tf~_td    = sum over fields f of  w_f * tf_tdf / (1 - b_f + b_f * len_df / avglen_f)
    impact_td = idf_t * tf~_td * (k1 + 1) / (tf~_td + k1)
    idf_t     = ln(1 + (N - df_t + 0.5) / (df_t + 0.5))

This is the "simple BM25F" of Robertson, Zaragoza & Taylor (CIKM 2004):
field frequencies are length-normalised per field and added with weights
*before* the saturation, so a word in title and body is not counted as
two independent pieces of evidence, which BM25 over separate fields would
do. ``idf`` is Lucene's BM25 idf (always positive).

Nothing here depends on the query, so the impacts are stored in the index
segment and a query only adds them up; the largest impact of each term
bounds what it can add, which dynamic pruning (``services.search.retrieval.rank``)
uses.

Parameters are literature defaults, not fitted to an evaluation collection:
k1 = 1.2 and body b = 0.75 (Robertson & Zaragoza 2009). Short fields are
normalised less (title b = 0.5, url b = 0.5), because their lengths vary
little; anchor text b = 0.75 (Zaragoza et al.'s TREC web runs used high b
for anchors: a page linked from everywhere should not win by the sheer
amount of anchor text). Field weights: body 1, title 1.5, anchor 1, url 0.5, meta 1,
nav 0.25.

The meta field is the page's ``<meta name=description>`` and ``<meta name=keywords>``.
Weight 1, b = 0.75, the body's: the description was body text before it had a field
of its own, so its evidence keeps its weight, and now neither lengthens the body nor is
diluted by it. Not more than the body: both are written by the page's author for
search engines, and keywords became the textbook spam vector (Google has ignored them
since 2009, Bing reads stuffing as a spam signal), so a boost would reward stuffing;
the body's b = 0.75 makes a long keyword list count for less per word, and since the
field's frequencies enter BM25F before saturation, a word repeated in the keywords
adds little once title or body hold it.

The nav field is what a reader sees beside the page's content: the menus, site headers,
footers and sidebars the page marks, the link lists of pages that mark none (both cut out
of the body: ``services.text.extract.boilerplate``) and the words of forms that are no text
(placeholders, button labels). Until it was a field, that text was dropped: a job title
on a page listing jobs, the words of a login form found nothing. Weight 0.25, b = 0.5:

- *Low weight.* That a page links to a topic, or offers a form, is weak evidence that it
  is about it. Weighing a page's blocks by their importance, navigation and link blocks
  lowest, rather than keeping or dropping them whole, is the way of block-level web
  retrieval (Song et al., "Learning block importance models for web pages", WWW 2004;
  Cai et al., "Block-based web search", SIGIR 2004). At 0.25 four occurrences in
  navigation count as one in the body before saturation: one mention in a nav of average
  length gives 0.25 * 2.2 / 1.45 = 0.38 of the idf, against 1.0 for one in a body of
  average length, so of two pages alike in all else, the one holding a word in its body
  or title ranks above the one holding it only in its navigation, and a page found only
  through its navigation still comes up when nothing better holds the word. Not lower: a
  weight near 0 would leave a navigation match an arbitrary tail below every partial
  match of the query's other words.
- *b = 0.5, as the other short fields.* Most pages' nav is the site's template (the same
  menu, so lengths vary with the site, not with how much the page says about a word); a
  long link list still counts for less per word (half normalised), but a page whose list
  is long is not crushed for it.
- *Repetition is idf's job.* One idf per term over the whole document, as BM25F has it
  (and Lucene's ``CombinedFieldQuery``, which scores a synthetic combined field): a menu
  word on every page of a site is in every document of that site, so its idf, and with
  it any score a menu gives, tends to 0 as the site's share of the index grows (on a
  one-site index, by itself); a word in one page's list of jobs keeps a high idf.
- *Nowhere else:* nav text lengthens no other field, fills no snippet, feeds neither
  feedback (RM3 reads title, body and meta) nor near-duplicate detection (two pages of one
  site share their menu), and gives no words-as-typed bonus.

A title field boost of 2 hurts plain BM25 on Cranfield, whose body repeats
the title (``python -m benchmarks.ranking_peers``); with BM25F the boost enters before saturation, so a
modest 1.5 keeps the title's value on the web without letting a title
match outweigh the body (docs/ranking.md shows the measurements).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

FIELD_NAMES = ("title", "body", "anchor", "url", "meta", "nav")


@dataclass(frozen=True)
class FieldParams:
    weight: float
    b: float


@dataclass(frozen=True)
class BM25FParams:
    k1: float = 1.2
    fields: dict[str, FieldParams] = field(
        default_factory=lambda: {
            "title": FieldParams(1.5, 0.5),
            "body": FieldParams(1.0, 0.75),
            "anchor": FieldParams(1.0, 0.75),
            "url": FieldParams(0.5, 0.5),
            "meta": FieldParams(1.0, 0.75),
            "nav": FieldParams(0.25, 0.5),
        }
    )

    def to_meta(self) -> dict[str, Any]:
        return {"k1": self.k1, "fields": {name: asdict(p) for name, p in self.fields.items()}}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> BM25FParams:
        return cls(float(meta["k1"]), {name: FieldParams(**p) for name, p in meta["fields"].items()})


DEFAULT_PARAMS = BM25FParams()


@dataclass(frozen=True)
class CollectionStats:
    """The collection a segment's impacts are scored against, when the segment holds only
    part of it (a delta segment: ``services.indexing.delta_build``). BM25F's idf and length
    normalisation are collection statistics: scored with a delta's own, a word rare in the
    index but common in one crawl batch would weigh as common, and a batch of long pages would
    normalise itself. None of these is needed when a segment holds the whole collection (a
    build, a merge): its own postings and lengths are the statistics.

    ``num_docs``: N of the idf (every document number of the collection).
    ``average_lengths``: each field's mean length over all N documents, ``FIELD_NAMES`` order.
    ``other_df``: documents holding each term outside the segment (the version's other
    segments, less the copies the segment supersedes); the segment adds its own."""

    num_docs: int
    average_lengths: tuple[float, ...]
    other_df: Mapping[bytes, int] = field(default_factory=dict)

    def df(self, terms: Sequence[bytes], own: np.ndarray) -> np.ndarray:
        """The collection's document frequency of ``terms`` (``own``: the segment's, aligned)."""
        other = np.fromiter((self.other_df.get(t, 0) for t in terms), dtype=np.int64, count=len(terms))
        out: np.ndarray = own.astype(np.int64) + other
        return out


def bm25_idf(df: np.ndarray, num_docs: int) -> np.ndarray:
    """Lucene's BM25 idf, ``ln(1 + (N - df + 0.5) / (df + 0.5))``: positive even for df > N/2."""
    df = df.astype(np.float64)
    return np.log1p((num_docs - df + 0.5) / (df + 0.5))


def average_lengths(lengths: Sequence[np.ndarray]) -> list[float]:
    """Mean length of each field over all documents (1.0 where a field is always empty)."""
    return [float(x.mean()) if x.shape[0] and x.mean() > 0 else 1.0 for x in lengths]


def impacts(
    post_docs: np.ndarray,
    post_tfs: Sequence[np.ndarray],
    term_of_posting: np.ndarray,
    idf: np.ndarray,
    field_lengths: Sequence[np.ndarray],
    params: BM25FParams = DEFAULT_PARAMS,
    averages: Sequence[float] | None = None,
) -> np.ndarray:
    """The impact of every posting (float32), in posting order.

    ``post_tfs`` and ``field_lengths`` are in ``FIELD_NAMES`` order: one array
    per field, the former aligned with ``post_docs``, the latter indexed by doc.
    ``averages``: the fields' mean lengths over the collection (``CollectionStats``) when
    ``field_lengths`` are not the whole collection's; None: their own means.
    """
    docs = post_docs.astype(np.intp, copy=False)
    pseudo = np.zeros(docs.shape[0], dtype=np.float32)  # float32: the impacts are stored so
    for name, tfs, lengths, avg in zip(
        FIELD_NAMES,
        post_tfs,
        field_lengths,
        average_lengths(field_lengths) if averages is None else list(averages),
        strict=True,
    ):
        p = params.fields[name]
        if p.weight == 0 or not tfs.any():
            continue
        # The field's normaliser per document, then looked up per posting. A posting without
        # the word in this field adds nothing: with b = 1 an empty field's normaliser is 0,
        # and 0 / 0 would make the impact NaN (a full b is a legal BM25F setting).
        norm = (1.0 - p.b + p.b * lengths.astype(np.float64) / avg).astype(np.float32)
        held = np.zeros(docs.shape[0], dtype=np.float32)
        scaled = np.float32(p.weight) * tfs.astype(np.float32)
        pseudo += np.divide(scaled, norm[docs], out=held, where=scaled > 0)
    k1 = np.float32(params.k1)
    weight = idf.astype(np.float32)[term_of_posting] * pseudo * (k1 + np.float32(1.0)) / (pseudo + k1)
    out: np.ndarray = weight.astype(np.float32, copy=False)
    return out
