"""Check the built site: every page renders, every image loads, every link and anchor resolves.

    python tools/check_site.py SITE [--screenshots DIR]

Two passes:

1. Over the HTML files (standard library): each internal link names a page that exists and,
   with ``#anchor``, an element with that id there; each image file exists and is an image.
2. In a real browser: headless Chromium (Debian's ``chromium-headless-shell`` or ``chromium``)
   loads every page from a local HTTP server (127.0.0.1) in an iframe of a checker page and
   reports, per page, its ``<h1>``, its rendered text, each image that did not load
   (``naturalWidth == 0``) and each ``#anchor`` link without a target.  The search plugin's
   scripts are not served to it (their web worker stalls ``--dump-dom``).  Screenshots of the
   index and one tutorial page go to DIR.

Without Chromium the second pass is skipped with a note, unless CI is set, where it fails.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html.parser
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
SCREENSHOTS = {"index.png": "index.html", "tutorial.png": "tutorials/03_matmul/index.html"}


class Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []
        self.h1 = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("id", "name"):
            if values.get(key):
                self.ids.add(values[key] or "")
        if tag == "a" and values.get("href"):
            self.links.append(values["href"] or "")
        if tag == "img" and values.get("src"):
            self.images.append(values["src"] or "")
        if tag == "h1":
            self.h1 += 1


def static_check(site: Path) -> list[str]:
    problems = []
    pages = {p.relative_to(site).as_posix(): p for p in site.rglob("*.html")}
    parsed = {}
    for name, path in pages.items():
        page = Page()
        page.feed(path.read_text(encoding="utf-8"))
        parsed[name] = page
    for name, page in parsed.items():
        if name not in ("404.html", "search.html") and page.h1 == 0 and not name.startswith("_"):
            problems.append(f"{name}: no <h1>")
        base = "/" + name
        for src in page.images:
            target = _local(site, base, src)
            if target is None:
                continue
            if not target.is_file():
                problems.append(f"{name}: image {src} does not exist")
            elif target.suffix == ".png" and not target.read_bytes().startswith(b"\x89PNG"):
                problems.append(f"{name}: image {src} is not a PNG")
        for href in page.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith("mailto:"):
                continue
            target = _local(site, base, href)
            if target is None:
                continue
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{name}: link {href} names no file")
                continue
            if parts.fragment and target.suffix == ".html":
                key = target.relative_to(site).as_posix()
                if unquote(parts.fragment) not in parsed[key].ids:
                    problems.append(f"{name}: link {href}: no #{parts.fragment} in {key}")
    return problems


def _local(site: Path, base: str, url: str) -> Path | None:
    parts = urlsplit(urljoin(base, url))
    if parts.scheme or parts.netloc:
        return None
    return site / unquote(parts.path).lstrip("/")


CHECKER = """<!doctype html><html><body><script>
const pages = %s;
function check(url) {
  return new Promise(resolve => {
    const frame = document.createElement('iframe');
    frame.style.width = '1200px'; frame.style.height = '900px';
    const done = () => {
      const doc = frame.contentDocument;
      const broken = [...doc.images].filter(i => !(i.complete && i.naturalWidth > 0))
        .map(i => i.getAttribute('src'));
      const h1 = doc.querySelector('h1');
      const ids = new Set([...doc.querySelectorAll('[id]')].map(e => e.id));
      const missing = [...doc.querySelectorAll('a[href^="#"]')]
        .map(a => decodeURIComponent(a.getAttribute('href').slice(1)))
        .filter(id => id && !ids.has(id));
      resolve({url, h1: h1 ? h1.textContent : null, text: doc.body.innerText.length,
               broken, missing});
      frame.remove();
    };
    frame.onload = done;
    frame.src = url;
    document.body.appendChild(frame);
  });
}
(async () => {
  const results = [];
  for (const page of pages) results.push(await check(page));
  const out = document.createElement('pre');
  out.id = 'results';
  out.textContent = JSON.stringify(results);
  document.body.appendChild(out);
})();
</script></body></html>
"""


def browser() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


@contextlib.contextmanager
def serve(site: Path):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        # The search plugin's web worker keeps Chromium's virtual time from ever running out
        # (--dump-dom never comes back); the pages are checked without it.
        if "/search/" in self.path:
            self.send_error(404)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


def browser_check(site: Path, chrome: str, shots: Path | None) -> list[str]:
    pages = sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if not p.name.startswith("_") and p.name != "404.html"
    )
    checker = site / "_check.html"
    checker.write_text(CHECKER % json.dumps(["/" + p for p in pages]), encoding="utf-8")
    problems = []
    profile = tempfile.mkdtemp(prefix="phobos-chromium-")
    flags = [] if "headless-shell" in Path(chrome).name else ["--headless"]
    flags += [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--no-first-run",
    ]
    try:
        with serve(site) as url:
            done = subprocess.run(
                [
                    chrome,
                    *flags,
                    "--virtual-time-budget=120000",
                    "--dump-dom",
                    f"{url}/_check.html",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            dom = done.stdout
            start = dom.find('<pre id="results">')
            if start < 0:
                return [
                    f"chromium rendered no results (exit {done.returncode}): {done.stderr[-800:]}"
                ]
            raw = dom[start + len('<pre id="results">') : dom.index("</pre>", start)]
            results = json.loads(html.unescape(raw))
            if len(results) != len(pages):
                problems.append(f"chromium checked {len(results)} of {len(pages)} pages")
            for result in results:
                page = result["url"]
                if not result["h1"] and "search.html" not in page:
                    problems.append(f"{page}: rendered without an <h1>")
                if result["text"] < 40:
                    problems.append(
                        f"{page}: rendered almost no text ({result['text']} characters)"
                    )
                for src in result["broken"]:
                    problems.append(f"{page}: image {src} did not load")
                for anchor in result["missing"]:
                    problems.append(f"{page}: link #{anchor} has no target")
            print(f"check_site: chromium rendered {len(results)} pages")
            if shots is not None:
                shots.mkdir(parents=True, exist_ok=True)
                for name, page in SCREENSHOTS.items():
                    subprocess.run(
                        [chrome, *flags, "--window-size=1280,1400", "--hide-scrollbars",
                         f"--screenshot={shots / name}", f"{url}/{page}"],
                        capture_output=True,
                        timeout=120,
                    )  # fmt: skip
                    if not (shots / name).is_file():
                        problems.append(f"no screenshot of {page}")
                    else:
                        print(f"check_site: screenshot {shots / name}")
    finally:
        checker.unlink(missing_ok=True)
        shutil.rmtree(profile, ignore_errors=True)
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="check_site", description=__doc__.split("\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--screenshots", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    site = args.site.resolve()
    if not (site / "index.html").is_file():
        print(f"check_site: error: {site} has no index.html: build the site first", file=sys.stderr)
        return 1
    problems = static_check(site)
    pages = len(list(site.rglob("*.html")))
    print(f"check_site: {pages} pages, links, anchors and images checked in the HTML")
    chrome = browser()
    if chrome is None:
        message = "no Chromium here (apt install chromium-headless-shell): browser check skipped"
        if os.environ.get("CI"):
            problems.append(message)
        else:
            print(f"check_site: note: {message}")
    else:
        problems += browser_check(site, chrome, args.screenshots)
    for problem in problems:
        print(f"check_site: error: {problem}", file=sys.stderr)
    if problems:
        return 1
    print("check_site: every page rendered, every image loaded, every link resolved")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
