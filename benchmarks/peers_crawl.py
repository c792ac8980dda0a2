"""The peers of the crawl benchmark, each run in its own process by benchmarks/crawl.py.

``bare``: asyncio + aiohttp + selectolax with a seen-set, no robots, no storage:
the practical upper limit of a Python crawler on this machine.
``bare-work``: the bare loop plus the work every page Nimbus stores needs, done by Nimbus's
own functions: ``parse_document`` (text, boilerplate, language, normalized links), the
url_id and docId hashes, and the page in a content block and a record block (in memory,
serialized every 500 pages and dropped). No robots.txt, politeness, spool or database: the
floor under Nimbus's CPU per page that its crawler machinery (frontier, leases, commits,
crash safety) adds to.
``scrapy``: Scrapy (robots obeyed, storing nothing, same concurrency).
Each prints one JSON line: {"pages": n, "seconds": wall time of the crawl}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from urllib.parse import urldefrag, urljoin


async def bare_crawl(seeds: list[str], max_pages: int, concurrency: int, work: bool = False) -> dict:
    import aiohttp
    from selectolax.lexbor import LexborHTMLParser

    store = _PageWork() if work else None

    seen = set(seeds)
    queue: asyncio.Queue[str] = asyncio.Queue()
    for s in seeds:
        queue.put_nowait(s)
    pages = 0
    start = time.perf_counter()

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal pages
        while pages < max_pages:
            try:
                url = await asyncio.wait_for(queue.get(), timeout=2.0)
            except TimeoutError:
                return
            try:
                async with session.get(url) as resp:
                    body = await resp.read()
                    if resp.status != 200:
                        continue
            except aiohttp.ClientError:
                continue
            if pages >= max_pages:
                return
            pages += 1
            if store is not None:
                try:
                    links = store.page(url, resp.headers.get("Content-Type", ""), body)
                except ValueError:  # ParseError: an empty body, a type that is not indexed
                    continue
                for link in links:
                    if link not in seen:
                        seen.add(link)
                        queue.put_nowait(link)
                continue
            tree = LexborHTMLParser(body.decode("utf-8", "replace"))
            if tree.body is not None:
                tree.body.text(separator=" ")
            for a in tree.css("a[href]"):
                link = urldefrag(urljoin(url, a.attributes.get("href") or ""))[0]
                if link not in seen:
                    seen.add(link)
                    queue.put_nowait(link)

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return {"pages": pages, "seconds": time.perf_counter() - start}


class _PageWork:
    """What a stored page costs Nimbus outside its crawler machinery, with Nimbus's code."""

    BLOCK_DOCS = 500

    def __init__(self) -> None:
        from services.crawler.commit.committer import new_document
        from services.crawler.commit.results import FetchedDoc, UrlResult
        from services.crawler.web.fetch_result import FetchResult
        from services.crawler.web.parse import parse_document
        from services.storage.formats.blocks import ContentBlockWriter
        from services.storage.formats.records import RecordBlockWriter
        from services.text.urls import normalize_url, url_id

        self._fetched, self._parse, self._normalize, self._url_id = (
            FetchResult,
            parse_document,
            normalize_url,
            url_id,
        )
        self._doc, self._result, self._new_document = FetchedDoc, UrlResult, new_document
        self._writers = (ContentBlockWriter, RecordBlockWriter)
        self.content, self.records = ContentBlockWriter(), RecordBlockWriter()
        self.blocks_bytes = 0

    def page(self, url: str, content_type: str, body: bytes) -> list[str]:
        """Parse and store one fetched page as the crawler's committer would (its
        ``new_document``); returns the page's links (normalized)."""
        page_url = self._normalize(url)
        parsed = self._parse(self._fetched(url, url, 200, content_type, body), page_url)
        doc = self._doc(page_url, body, parsed, time.time(), content_type=content_type)  # docId: SHA-1
        result = self._result(self._url_id(page_url), page_url, 0, "done", 200, doc=doc)
        stored = self._new_document(result, self.records.count)
        self.content.add(body, parsed.content_type, bytes.fromhex(stored.url_id), bytes.fromhex(doc.doc_id))
        self.records.add(stored.record())
        if len(self.content) >= self.BLOCK_DOCS:
            self.blocks_bytes += len(self.content.to_bytes()) + len(self.records.to_bytes())
            self.content, self.records = self._writers[0](), self._writers[1]()
        return [link.url for link in parsed.links]


def scrapy_crawl(seeds: list[str], max_pages: int, concurrency: int) -> dict:
    import scrapy
    from scrapy.crawler import CrawlerProcess

    result: dict = {}

    class LinkSpider(scrapy.Spider):
        name = "bench"
        start_urls = seeds

        def parse(self, response):
            yield {"url": response.url, "title": response.css("title::text").get()}
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse)

    process = CrawlerProcess(
        settings={
            "ROBOTSTXT_OBEY": True,
            "CONCURRENT_REQUESTS": concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
            "DOWNLOAD_DELAY": 0,
            "CLOSESPIDER_PAGECOUNT": max_pages,
            "LOG_LEVEL": "ERROR",
            "TELNETCONSOLE_ENABLED": False,
            "ITEM_PIPELINES": {},
        }
    )
    crawler = process.create_crawler(LinkSpider)

    def opened(spider):
        result["start"] = time.perf_counter()

    def closed(spider):
        stats = crawler.stats.get_stats()
        result["pages"] = stats.get("item_scraped_count", 0)
        result["seconds"] = time.perf_counter() - result.pop("start")

    from scrapy import signals

    crawler.signals.connect(opened, signal=signals.spider_opened)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler)
    process.start()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("peer", choices=["bare", "bare-work", "scrapy"])
    p.add_argument("--max-pages", type=int, required=True)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("seeds", nargs="+")
    args = p.parse_args(argv)
    if args.peer in ("bare", "bare-work"):
        work = args.peer == "bare-work"
        out = asyncio.run(bare_crawl(args.seeds, args.max_pages, args.concurrency, work=work))
    else:
        out = scrapy_crawl(args.seeds, args.max_pages, args.concurrency)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
