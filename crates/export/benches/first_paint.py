"""Times a browser's first paint of an exported page: headless Chromium
(Debian's), driven by Playwright. Figures only.

usage: python3 crates/export/benches/first_paint.py PAGE.html
(make a big page with `EXPORT_BENCH_PAGE=/tmp/page.html cargo bench -p agent-export`)
"""

import json
import pathlib
import sys
import time

from playwright.sync_api import sync_playwright

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main():
    url = pathlib.Path(sys.argv[1]).resolve().as_uri()
    runs = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS, headless=True)
        for _ in range(3):
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            start = time.monotonic()
            page.goto(url, wait_until="commit")
            page.wait_for_function(
                "performance.getEntriesByName('first-contentful-paint').length > 0", timeout=60000, polling=10)
            fcp = page.evaluate("performance.getEntriesByName('first-contentful-paint')[0].startTime")
            page.wait_for_load_state("load", timeout=120000)
            loaded = (time.monotonic() - start) * 1000
            runs.append({"firstContentfulPaintMs": round(fcp), "loadMs": round(loaded)})
            page.close()
        browser.close()
    print(json.dumps(runs))


if __name__ == "__main__":
    main()
