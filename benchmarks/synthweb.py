"""A synthetic web for crawl benchmarks: many pages of real text on several loopback hosts.

Pages are built from the Cranfield abstracts (real English text), each page
a deterministic mix of 2-4 abstracts with 10-30 links to other pages, spread
over hosts 127.0.0.1 .. 127.0.0.N (distinct host names, so per-host
politeness and Scrapy's per-domain slots see N hosts). Every host serves a
robots.txt that disallows /private/, and some pages link there, so a crawler
that ignores robots.txt fetches pages the others do not.

Run it in its own process (the benchmark does) so it does not share the
crawler's interpreter: ``python -m benchmarks.synthweb --pages 20000``.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import sys
from pathlib import Path

from aiohttp import web

DEFAULT_DOCS = Path(__file__).resolve().parents[1] / "data/ir/cranfield/docs.jsonl"
ROBOTS = "User-agent: *\nDisallow: /private/\n"


class SynthWeb:
    def __init__(self, pages: int, hosts: int, port: int, docs_path: Path, seed: int = 7) -> None:
        self.pages, self.hosts, self.port, self.seed = pages, hosts, port, seed
        docs = [json.loads(line) for line in docs_path.open(encoding="utf-8")]
        self.docs = [d for d in docs if d["text"]]

    def host_of(self, page: int) -> str:
        return f"127.0.0.{page % self.hosts + 1}"

    def url(self, page: int) -> str:
        return f"http://{self.host_of(page)}:{self.port}/p/{page}"

    def seeds(self) -> list[str]:
        return [self.url(i) for i in range(self.hosts)]

    def render(self, page: int) -> bytes:
        rng = random.Random(self.seed * 1_000_003 + page)
        parts = rng.sample(self.docs, rng.randint(2, 4))
        title = parts[0]["title"] or f"Page {page}"
        links = []
        for _ in range(rng.randint(10, 30)):
            target = rng.randrange(self.pages)
            anchor = html.escape(self.docs[target % len(self.docs)]["title"][:60])
            links.append(f'<li><a href="{self.url(target)}">{anchor}</a></li>')
        if rng.random() < 0.05:
            links.append(
                f'<li><a href="http://{self.host_of(page)}:{self.port}/private/{page}">private</a></li>'
            )
        body = "".join(f"<p>{html.escape(d['text'])}</p>" for d in parts)
        return (
            f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"</head><body><h1>{html.escape(title)}</h1>{body}<ul>{''.join(links)}</ul></body></html>"
        ).encode()

    async def handle_page(self, request: web.Request) -> web.Response:
        try:
            page = int(request.match_info["n"])
        except ValueError:
            raise web.HTTPNotFound() from None
        if not 0 <= page < self.pages or self.host_of(page) != request.host.split(":")[0]:
            raise web.HTTPNotFound()
        return web.Response(body=self.render(page), content_type="text/html", charset="utf-8")

    async def handle_robots(self, _request: web.Request) -> web.Response:
        return web.Response(text=ROBOTS, content_type="text/plain")

    async def handle_private(self, _request: web.Request) -> web.Response:
        return web.Response(text="<html><title>private</title></html>", content_type="text/html")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/robots.txt", self.handle_robots)
        app.router.add_get("/p/{n}", self.handle_page)
        app.router.add_get("/private/{n}", self.handle_private)
        return app

    async def start(self) -> web.AppRunner:
        runner = web.AppRunner(self.app(), access_log=None)
        await runner.setup()
        for h in range(self.hosts):
            await web.TCPSite(runner, f"127.0.0.{h + 1}", self.port, backlog=1024).start()
        return runner


def main(argv: list[str] | None = None) -> int:
    import asyncio

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=20_000)
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--port", type=int, default=8480)
    p.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    args = p.parse_args(argv)
    synth = SynthWeb(args.pages, args.hosts, args.port, args.docs)

    async def serve() -> None:
        await synth.start()
        print(json.dumps({"seeds": synth.seeds(), "pages": args.pages}), flush=True)
        while True:
            await asyncio.sleep(3600)

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
