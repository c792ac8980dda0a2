"""The peers of the crawl benchmark, each run in its own process by benchmarks/crawl.py.

``bare``: asyncio + aiohttp + selectolax with a seen-set, no robots, no storage:
the practical upper limit of a Python crawler on this machine.
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


async def bare_crawl(seeds: list[str], max_pages: int, concurrency: int) -> dict:
    import aiohttp
    from selectolax.lexbor import LexborHTMLParser

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
    p.add_argument("peer", choices=["bare", "scrapy"])
    p.add_argument("--max-pages", type=int, required=True)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("seeds", nargs="+")
    args = p.parse_args(argv)
    if args.peer == "bare":
        out = asyncio.run(bare_crawl(args.seeds, args.max_pages, args.concurrency))
    else:
        out = scrapy_crawl(args.seeds, args.max_pages, args.concurrency)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
