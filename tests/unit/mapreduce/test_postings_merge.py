"""The index job's pure parts: fields, positions, block-at-a-time combining, merging chunks."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass

import pytest

from mapreduce.postings import ANCHOR, FIELD_GAP, PostingBuffer, url_words
from mapreduce.postings_join import merge_chunks
from mapreduce.postings_wire import Chunk
from services.storage.formats.records import Record
from services.text.analysis.analyze import analyze

WORDS = [
    "wing",
    "lift",
    "drag",
    "flow",
    "boundary",
    "layer",
    "shock",
    "wave",
    "the",
    "of",
    "supersonic",
    "nozzle",
    "heat",
]


@dataclass
class DocPostings:
    """The reference: one document's per-field lengths and, per term, field tfs and positions,
    made with ``analyze`` document by document, the plain way."""

    doc: int
    lengths: tuple[int, int, int, int, int, int]  # title, body, anchor, url, meta, nav
    terms: dict[str, list]  # term -> [tf_title, tf_body, tf_anchor, tf_url, tf_meta, tf_nav, [positions]]


def document_postings(record: Record) -> DocPostings:
    lang = record.lang
    title = analyze(record.title, lang)
    body = analyze(record.text, lang)
    url = analyze(url_words(record.url), lang)
    meta = analyze(f"{record.description} {record.keywords}", lang)
    nav = analyze(record.nav, lang)
    title_pos: dict[str, list[int]] = defaultdict(list)
    body_pos: dict[str, list[int]] = defaultdict(list)
    for pos, term in enumerate(title):
        title_pos[term].append(pos)
    for pos, term in enumerate(body, len(title) + FIELD_GAP):
        body_pos[term].append(pos)
    url_tf, meta_tf, nav_tf = Counter(url), Counter(meta), Counter(nav)
    terms: dict[str, list] = {}
    for term in title_pos.keys() | body_pos.keys() | url_tf.keys() | meta_tf.keys() | nav_tf.keys():
        in_title, in_body = title_pos.get(term, ()), body_pos.get(term, ())
        tfs = [len(in_title), len(in_body), 0, url_tf.get(term, 0), meta_tf.get(term, 0), nav_tf.get(term, 0)]
        terms[term] = [*tfs, [*in_title, *in_body]]
    return DocPostings(record.doc_num, (len(title), len(body), 0, len(url), len(meta), len(nav)), terms)


def anchor_postings(doc: int, anchor_text: str, lang: str = "") -> DocPostings:
    words = analyze(anchor_text, lang)
    terms: dict[str, list] = {}
    for term in words:
        terms.setdefault(term, [0, 0, 0, 0, 0, 0, []])[ANCHOR] += 1
    return DocPostings(doc, (0, 0, len(words), 0, 0, 0), terms)


def test_url_words_split_host_and_path():
    assert url_words("https://www.Example.com/Flow-Models/a_b?x=1") == "www Example com Flow Models a b x 1"


def test_document_fields_and_positions():
    rec = Record(
        4,
        "http://w.test/wing",
        "",
        "",
        "text/html",
        title="Wing lift",
        description="Lift!",
        text="the wing lift",
        keywords="wings, drag",
        nav="Home | Wings | Sign in",
    )
    buffer = PostingBuffer()
    buffer.add(rec)
    chunks, lengths = buffer.drain()
    postings = as_dict(chunks)
    # url: w, test, wing; meta: lift, wing, drag; nav: home, wing, sign; no anchors
    assert lengths[4] == [2, 2, None, 3, 3, 3]
    assert postings["wing"] == {4: [1, 1, 0, 1, 1, 1, [0, 3]]}  # title pos 0; body after title + gap
    assert postings["lift"] == {4: [1, 1, 0, 0, 1, 0, [1, 4]]}
    assert postings["drag"] == {4: [0, 0, 0, 0, 1, 0, []]}  # the meta field has no positions
    assert postings["sign"] == {4: [0, 0, 0, 0, 0, 1, []]}  # nor the nav field


def reference(records: list[Record], anchors: dict[int, str]) -> dict[str, dict[int, list]]:
    """Per-document postings (document_postings / anchor_postings), merged by hand."""
    out: dict[str, dict[int, list]] = {}
    docs = [document_postings(r) for r in records]
    docs += [anchor_postings(doc, text) for doc, text in anchors.items()]
    for d in docs:
        for term, (*tfs, positions) in d.terms.items():
            entry = out.setdefault(term, {}).setdefault(d.doc, [0, 0, 0, 0, 0, 0, []])
            for i, v in enumerate(tfs):
                entry[i] += v
            entry[6] = sorted(entry[6] + positions)
    return out


def as_dict(chunks) -> dict[str, dict[int, list]]:
    out = {}
    for term, chunk in chunks:
        docs, tt, tb, ta, tu, tm, tn, counts, positions = chunk.as_lists()
        assert docs == sorted(set(docs))  # ascending, one posting per document
        at, entries = 0, {}
        for i, d in enumerate(docs):
            entries[d] = [tt[i], tb[i], ta[i], tu[i], tm[i], tn[i], positions[at : at + counts[i]]]
            at += counts[i]
        out[term] = entries
    return out


def filled(records: list[Record], anchors: dict[int, str], compiled: bool = False) -> PostingBuffer:
    buffer = PostingBuffer(compiled=compiled)
    for r in records:
        buffer.add(r)
    for doc, text in anchors.items():
        buffer.add_anchor(doc, text)
    return buffer


def assert_reference_lengths(
    lengths: dict[int, list], records: list[Record], anchors: dict[int, str]
) -> None:
    """Each page's field lengths as ``analyze`` counts them (None: anchors not seen)."""
    for r in records:
        title, body, _anchor, url, meta, nav = document_postings(r).lengths
        anchor = anchor_postings(r.doc_num, anchors[r.doc_num]).lengths[2] if r.doc_num in anchors else None
        assert lengths[r.doc_num] == [title, body, anchor, url, meta, nav]


@pytest.mark.parametrize("compiled", [False, True], ids=["split and dict", "numba kernel"])
def test_block_buffer_gives_the_per_document_postings(compiled: bool):
    rng = random.Random(7)
    records = [
        Record(
            num,
            f"http://h{num % 3}.test/{rng.choice(WORDS)}",
            "",
            "",
            "text/html",
            title=" ".join(rng.choices(WORDS, k=rng.randint(0, 4))),
            text=" ".join(rng.choices(WORDS, k=rng.randint(0, 60))),
            nav=" ".join(rng.choices(WORDS, k=rng.choice((0, 0, 5, 20)))),
        )
        for num in rng.sample(range(100), 40)
    ]  # doc_nums out of order, as after recrawls
    anchors = {num: " | ".join(rng.choices(WORDS, k=3)) for num in rng.sample(range(100), 10)}
    buffer = filled(records, anchors, compiled)
    chunks, lengths = buffer.drain()
    assert as_dict(chunks) == reference(records, anchors)
    assert_reference_lengths(lengths, records, anchors)
    assert all(lengths[doc][2] is not None for doc in anchors)
    assert buffer.tokens == 0
    postings, lengths = buffer.drain()
    assert len(postings) == 0 and lengths == {}


def pages(
    rng: random.Random, nums: list[int], title: int, body: int, words: list[str] = WORDS
) -> list[Record]:
    """A page per doc_num of ``nums``, in that order: up to ``title`` and ``body`` words of
    ``words``, and a description on some."""
    return [
        Record(
            num,
            f"http://h.test/{num}",
            "",
            "",
            "text/html",
            title=" ".join(rng.choices(words, k=rng.randint(0, title))),
            text=" ".join(rng.choices(words, k=rng.randint(0, body))),
            description=" ".join(rng.choices(words, k=rng.choice((0, 0, 6)))),
        )
        for num in nums
    ]


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "the job's kernels"])
def test_pages_in_document_order_take_the_term_only_sort_with_the_same_result(compiled: bool):
    """Pages in document order (as blocks give them) are grouped by a 16-bit stable sort
    of the term alone, or by the job's kernels (``postings_kernels``); the postings must
    equal the per-document reference."""
    rng = random.Random(11)
    records = pages(rng, sorted(rng.sample(range(1000), 60)), 3, 80)
    postings, _lengths = filled(records, {}, compiled).drain()
    assert as_dict(postings) == reference(records, {})


@pytest.mark.parametrize("compiled", [False, True], ids=["split and dict", "numba kernel"])
def test_block_buffer_matches_analyze_on_any_script_and_separator(compiled: bool):
    """The buffer cuts text at ASCII separators and splits each distinct rough token with the
    word regex; on joiners, non-ASCII separators, scripts without spaces and combining marks its
    terms, positions and lengths must still be ``analyze``'s, document by document."""
    texts = [
        "Don't stop: U.S. aircraft’s wings... end. .start 'tis o'clock a..b a.'b _x_",
        "1990–1995 — «quoted» “curly” x·y a\u00a0b c\u2003d e\u2028f ½ ² Ⅻ ﬀ Straße",
        "Ελληνικά κείμενα, русский текст; 中文字符。日本語のテキスト、한국어 텍스트! wing–lift–drag",
        "cafe\u0301 e\u0301t\u00e9 \u0301lead \ud800 👍🏽 zero\u200bwidth tab\tnew\nnul\x00",
        "",
        "the of and",
        "wing wing wing",
    ]
    records = [
        Record(
            num,
            f"http://h.test/{num}",
            "",
            "",
            "text/html",
            title=texts[-num % 7],
            description=texts[(num + 3) % 7],
            text=" ".join(texts[num % 7 :]),
        )
        for num in range(20)
    ]
    anchors = {3: texts[1], 7: texts[2] + " | " + texts[0]}
    postings, lengths = filled(records, anchors, compiled).drain()
    assert as_dict(postings) == reference(records, anchors)
    assert_reference_lengths(lengths, records, anchors)


def test_merge_concatenates_disjoint_chunks_and_joins_overlapping_ones():
    a = PostingBuffer()
    a.add(Record(7, "http://a.test/", "", "", "text/html", text="wing wing"))
    b = PostingBuffer()
    b.add(Record(2, "http://b.test/", "", "", "text/html", text="wing"))
    c = PostingBuffer()
    c.add_anchor(7, "Wing page | wings")
    wing = [dict(x.drain()[0])["wing"] for x in (a, b, c)]
    assert merge_chunks(wing[:2]).as_lists() == [
        [2, 7],
        [0, 0],
        [1, 2],
        [0, 0],
        [0, 0],
        [0, 0],
        [0, 0],
        [1, 2],
        [1, 1, 2],
    ]
    merged = merge_chunks(wing)
    assert merged.as_lists() == [[2, 7], [0, 0], [1, 2], [0, 2], [0, 0], [0, 0], [0, 0], [1, 2], [1, 1, 2]]
    assert Chunk.decode(merged.encode()).as_lists() == merged.as_lists()  # the wire format


@pytest.mark.parametrize("compiled", [False, True], ids=["split and dict", "numba kernel"])
def test_each_page_is_analyzed_in_its_language_and_counted(compiled: bool):
    texts = [
        "Die Häuser der Altstadt und die Brücken",
        "Les élections municipales de l'année",
        "Книги о ёлках и книгу",
        "ภาษาไทยเป็นภาษาที่สวยงาม",
        "The running dogs of the houses",
    ]
    langs = ["de", "fr", "ru", "th", "en", "", "ja"]
    records = [
        Record(
            num, f"http://h.test/{num}", "", "", "text/html", title=texts[num % 5], text=texts[(num + 1) % 5]
        )
        for num in range(14)
    ]
    for num, record in enumerate(records):
        record.lang = langs[num % len(langs)]
    buffer = filled(records, {}, compiled)
    assert buffer.languages == {"de": 2, "fr": 2, "ru": 2, "plain": 4, "en": 4}
    postings, lengths = buffer.drain()
    assert as_dict(postings) == reference(records, {})
    assert_reference_lengths(lengths, records, {})
    assert 0 in as_dict(postings)["haus"]  # German page: German stems
    assert 4 in as_dict(postings)["dog"]  # English page: English stems
    assert buffer.languages == {}  # counted per drain


@pytest.mark.parametrize("in_order", [True, False], ids=["pages in document order", "pages out of order"])
def test_the_job_kernels_give_the_numpy_postings_and_form_filters_byte_for_byte(in_order: bool):
    """Pages in document order take the job's kernels for their postings and form filters
    (``postings_kernels``, ``forms.filters_in_document_order``), others numpy; both give the
    same postings, filters, count of documents per form and wire text."""
    rng = random.Random(13)
    nums = rng.sample(range(500), 80)
    records = pages(rng, sorted(nums) if in_order else nums, 4, 90, WORDS + [w.upper() for w in WORDS])
    anchors = {num: " | ".join(rng.choices(WORDS, k=3)) for num in rng.sample(nums, 12)}
    by_numpy, _ = filled(records, anchors, compiled=False).drain()
    by_kernels, _ = filled(records, anchors, compiled=True).drain()
    assert as_dict(by_kernels) == as_dict(by_numpy) == reference(records, anchors)
    assert by_kernels.forms == by_numpy.forms and by_kernels.vocabulary == by_numpy.vocabulary
    assert by_kernels.compiled and not by_numpy.compiled
    assert by_kernels.encoded() == by_numpy.encoded()  # the wire text, byte for byte
    assert len(by_numpy.forms) == sum(1 for r in records if r.title or r.text or r.description)


@pytest.mark.parametrize("limit", [300_000, 3], ids=["kept", "emptied every flush"])
def test_a_buffers_later_flushes_equal_a_fresh_buffers(limit: int):
    """The rough tokens' analyses a buffer keeps from one flush to the next
    (``RoughAnalyses``) change nothing: each flush of one buffer, over pages in several
    languages and scripts sharing most of their words, gives what a new buffer gives for the
    same pages (postings, form filters, the written forms' counts, the wire text), also when
    the kept tables are emptied as they outgrow ``limit``."""
    from mapreduce.rough_terms import RoughAnalyses

    texts = [
        "Die Häuser der Altstadt und die Brücken; Don't stop: U.S. aircraft’s wings... end.",
        "Les élections municipales de l'année 1990–1995 — «quoted» “curly” x·y",
        "Книги о ёлках и книгу; 中文字符。日本語のテキスト wing–lift–drag",
        "The running dogs of the houses ภาษาไทยเป็นภาษาที่สวยงาม cafe\u0301 Straße",
    ]
    langs = ["de", "fr", "ru", "en", ""]
    rng = random.Random(5)
    shared = PostingBuffer(compiled=True)
    shared._analyses = RoughAnalyses(limit)
    for flush in range(4):
        records = pages(rng, list(range(flush * 30, flush * 30 + 30)), 4, 40, WORDS + texts[flush].split())
        for num, record in enumerate(records):
            record.lang = langs[(num + flush) % len(langs)]
        for record in records:
            shared.add(record)
        got, got_lengths = shared.drain()
        fresh, fresh_lengths = filled(records, {}, compiled=True).drain()
        assert as_dict(got) == as_dict(fresh) == reference(records, {})
        assert got.forms == fresh.forms and got.vocabulary == fresh.vocabulary
        assert got.encoded() == fresh.encoded()
        assert got_lengths == fresh_lengths
