"""Check a rendered report in a real browser (headless Chromium/Chrome): every section renders
and every image loads.

A copy of the page gets a small script that runs after ``load`` and writes what the browser sees
(per section: visible height, title, headline rows; per image: ``complete`` and ``naturalWidth``)
into a ``<pre id=fedclust-check>``; ``chromium --headless --dump-dom --virtual-time-budget`` prints
the DOM after the page settled, and the JSON is read back from it.

    python -m fedclust.report.browser results/report/index.html
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

_JS = r"""
<script>
window.addEventListener('load', function () {
  var out = {sections: [], images: [], nav: document.querySelectorAll('nav li').length};
  document.querySelectorAll('section.report-section').forEach(function (s) {
    var h2 = s.querySelector('h2');
    var hl = s.querySelector('.headline');
    out.sections.push({
      id: s.id,
      title: h2 ? h2.textContent : '',
      height: s.getBoundingClientRect().height,
      headline: !!hl,
      headline_rows: hl ? hl.querySelectorAll('tbody tr').length : 0,
      headline_visible: hl ? hl.getBoundingClientRect().height > 0 : false,
      sentence: hl && hl.querySelector('.verdict') ? hl.querySelector('.verdict').textContent : '',
      details: s.querySelectorAll('details').length
    });
  });
  document.querySelectorAll('img').forEach(function (im) {
    var s = im.closest('section');
    out.images.push({section: s ? s.id : '', alt: im.alt, complete: im.complete,
                     width: im.naturalWidth, height: im.naturalHeight});
  });
  var pre = document.createElement('pre');
  pre.id = 'fedclust-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def find_browser() -> str | None:
    """``FEDCLUST_BROWSER`` or the first Chromium/Chrome on PATH; None when there is none."""
    env = os.environ.get("FEDCLUST_BROWSER")
    if env:
        return env if shutil.which(env) or Path(env).exists() else None
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def inspect(
    html_path: str | os.PathLike,
    browser: str | None = None,
    timeout: int = 180,
    budget_ms: int = 20000,
) -> dict[str, Any]:
    """What a headless browser sees of the report: {'sections': [...], 'images': [...]}."""
    browser = browser or find_browser()
    if browser is None:
        raise FileNotFoundError(
            "no Chromium/Chrome found (install chromium or set FEDCLUST_BROWSER)"
        )
    page = Path(html_path).read_text(encoding="utf-8")
    page = page.replace("</body>", _JS + "</body>") if "</body>" in page else page + _JS
    with tempfile.TemporaryDirectory(prefix="fedclust-browser-") as tmp:
        probe = Path(tmp) / "page.html"
        probe.write_text(page, encoding="utf-8")
        cmd = [
            browser,
            "--headless",
            "--no-sandbox",  # root in containers / CI
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={Path(tmp) / 'profile'}",
            f"--virtual-time-budget={int(budget_ms)}",
            "--dump-dom",
            probe.as_uri(),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    m = re.search(r'<pre id="fedclust-check">(.*?)</pre>', res.stdout, re.S)
    if not m:
        tail = (res.stderr or "")[-2000:]
        raise RuntimeError(
            f"the browser did not run the check script (exit {res.returncode}): {tail}"
        )
    return json.loads(html.unescape(m.group(1)))


def problems(result: dict[str, Any], expect_sections: list[str] | None = None) -> list[str]:
    """Every way the page fails: a section not rendered (no height or title), a section without
    headline rows, an image not loaded, sections missing from the page or the navigation."""
    out = []
    ids = [s["id"] for s in result["sections"]]
    if not ids:
        out.append("no section rendered")
    if result.get("nav") != len(ids):
        out.append(f"navigation lists {result.get('nav')} sections, page has {len(ids)}")
    for want in expect_sections or []:
        if want not in ids:
            out.append(f"section {want!r} missing")
    for s in result["sections"]:
        if s["height"] <= 0 or not s["title"].strip():
            out.append(f"section {s['id']!r} not rendered (height {s['height']})")
        if not s["headline"] or s["headline_rows"] == 0 or not s["headline_visible"]:
            out.append(f"section {s['id']!r} has no visible headline table")
    for im in result["images"]:
        if not im["complete"] or im["width"] <= 0 or im["height"] <= 0:
            out.append(f"image {im['alt']!r} in section {im['section']!r} did not load")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__)
        return 2
    result = inspect(args[0])
    for s in result["sections"]:
        n_img = sum(im["section"] == s["id"] for im in result["images"])
        print(
            f"{s['id']:>10}: {s['height']:.0f} px, headline rows {s['headline_rows']}, "
            f"{n_img} images, {s['details']} collapsible blocks"
        )
    bad = problems(result)
    print(
        f"{len(result['sections'])} sections, {len(result['images'])} images, {len(bad)} problems"
    )
    for p in bad:
        print("  PROBLEM:", p)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
