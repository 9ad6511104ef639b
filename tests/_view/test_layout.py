"""Layout in headless Chromium at 1280 and 800 px: on the task table, a task page, a state
page, the policy page, the page with the most diff rows and the rollout statistics page, no
element runs past its container or the viewport (except inside a declared scroll container),
no text is clipped (an ellipsis is allowed where the element's title holds the whole text) and
no chart label is cut off.

One Chromium run measures every page at both widths: a harness page loads each written page
in an iframe of that width (``--allow-file-access-from-files`` lets it read the frames) and
writes what it measured (``scrollWidth``, ``clientWidth``, bounding boxes, SVG text boxes) into
its own DOM, which ``--dump-dom`` returns. Skipped where Debian's ``chromium`` is not
installed. With ``VERITASK_VIEW_SCREENSHOTS=DIR`` each page is also saved at both widths as
``DIR/layout-<page>-<width>.png``.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from veritask._view import Site, open_pages
from veritask._view._state_pages import policy_path, state_path
from veritask.task import load_dataset

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
WIDTHS = (1280, 800)
HEIGHT = 900
SHOTS = os.environ.get("VERITASK_VIEW_SCREENSHOTS")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--hide-scrollbars",
    "--allow-file-access-from-files",
]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

CHECK = r"""
function describe(el) {
  var cls = typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\s+/).join(".") : "";
  return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + cls;
}
function check(doc) {
  var win = doc.defaultView, vw = doc.documentElement.clientWidth, out = [];
  var scrolls = function (el) { var o = win.getComputedStyle(el).overflowX; return o === "auto" || o === "scroll"; };
  if (doc.documentElement.scrollWidth > vw + 1) { out.push(["page wider than the viewport", doc.documentElement.scrollWidth, vw]); }
  doc.body.querySelectorAll("*").forEach(function (el) {
    if (el.closest("svg") || ["SCRIPT", "STYLE", "OPTION", "BR"].indexOf(el.tagName) >= 0) { return; }
    var box = el.getBoundingClientRect();
    if (!box.width && !box.height) { return; }
    for (var p = el.parentElement; p && p !== doc.body; p = p.parentElement) { if (scrolls(p)) { return; } }
    if (box.right > vw + 1) { out.push(["past the viewport", describe(el), Math.round(box.right), vw]); }
    var parent = el.parentElement;
    if (parent && parent !== doc.body) {
      var pbox = parent.getBoundingClientRect();
      if (box.right > pbox.right + 1) { out.push(["past its container", describe(el), describe(parent), Math.round(box.right - pbox.right)]); }
    }
    var style = win.getComputedStyle(el);
    if ((style.overflowX === "hidden" || style.overflowX === "clip") && el.scrollWidth > el.clientWidth + 1
        && !(style.textOverflow === "ellipsis" && el.title)) {
      out.push(["clipped text", describe(el), el.scrollWidth, el.clientWidth]);
    }
  });
  doc.querySelectorAll("svg.chart text").forEach(function (t) {
    var b = t.getBBox(), view = t.ownerSVGElement.viewBox.baseVal;
    if (b.x < -0.5 || b.x + b.width > view.width + 0.5) { out.push(["chart label cut off", t.textContent]); }
  });
  return out;
}
window.addEventListener("load", function () {
  var report = {};
  document.querySelectorAll("iframe").forEach(function (frame) {
    report[frame.getAttribute("data-name")] = frame.contentDocument ? check(frame.contentDocument) : [["not readable"]];
  });
  var pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(report);
  document.body.appendChild(pre);
});
"""


def _chromium(tmp: Path, *args: str) -> str:
    assert CHROMIUM is not None
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def _most_diff_rows(root: Path, paths: list[str]) -> str:
    """The task page drawing the most diff rows."""
    tasks = [p for p in paths if p.startswith("task/")]
    rows = re.compile(r'<tr class="(?:changed|added|removed)">')
    return max(tasks, key=lambda p: (len(rows.findall((root / p).read_text("utf-8"))), p))


@pytest.fixture(scope="module")
def pages(
    generated: Any, trajectories: Path, dataset: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str]]:
    """Written bundles of an eight-task travel dataset and of the mock trajectories, and the
    pages to measure (name -> path under the bundles' parent)."""
    out = tmp_path_factory.mktemp("layout")
    travel = generated("travel", 8, 1)
    site = Site(open_pages(travel))
    site.write(out / "travel")
    Site(open_pages(trajectories, dataset=dataset)).write(out / "runs")
    first = load_dataset(travel)[0]
    chosen = {
        "tasks": "travel/tasks.html",
        "task": f"travel/task/{first.id}.html",
        "state": f"travel/{state_path(first.origin)}",
        "policy": f"travel/{policy_path('travel')}",
        "diff": "travel/" + _most_diff_rows(out / "travel", site.pages.paths()),
        "statistics": "runs/stats.html",
    }
    return out, chosen


def test_no_overflow_and_no_clipping_at_both_widths(
    pages: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, chosen = pages
    frames = "".join(
        f'<iframe data-name="{name}@{width}" src="{html.escape(path)}" '
        f'style="width:{width}px;height:{HEIGHT}px;border:0;display:block"></iframe>'
        for name, path in chosen.items()
        for width in WIDTHS
    )
    harness = root / "harness.html"
    harness.write_text(f"<!doctype html><body>{frames}<script>{CHECK}</script></body>", "utf-8")
    dom = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", harness.as_uri())
    found = re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S)
    assert found is not None, "the harness wrote its measurements"
    report = json.loads(html.unescape(found.group(1)))
    assert sorted(report) == sorted(f"{n}@{w}" for n in chosen for w in WIDTHS)
    assert {name: problems for name, problems in report.items() if problems} == {}
    if SHOTS:
        for name, path in chosen.items():
            for width in WIDTHS:
                shot = Path(SHOTS) / f"layout-{name}-{width}.png"
                shot.parent.mkdir(parents=True, exist_ok=True)
                url = (root / path).as_uri()
                size = f"--window-size={width},{2400 if name == 'diff' else HEIGHT}"
                _chromium(tmp_path, size, f"--screenshot={shot}", url)
                assert shot.stat().st_size > 5_000


def test_the_harness_sees_an_overflow(tmp_path: Path) -> None:
    """The measurement is not vacuous: a page with a too-wide block and a clipped cell fails."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!doctype html><body><div style="width:300px"><div style="width:900px">wide</div></div>'
        '<p style="width:40px;overflow:hidden;white-space:nowrap">a clipped long text</p>'
        '<div style="overflow-x:auto;width:200px"><table><tr><td style="width:2000px">ok</td>'
        "</tr></table></div></body>",
        "utf-8",
    )
    harness = tmp_path / "harness.html"
    frame = '<iframe data-name="bad" src="bad.html" style="width:800px;height:400px"></iframe>'
    harness.write_text(f"<!doctype html><body>{frame}<script>{CHECK}</script></body>", "utf-8")
    dom = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", harness.as_uri())
    found = re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S)
    assert found is not None
    kinds = {p[0] for p in json.loads(html.unescape(found.group(1)))["bad"]}
    assert kinds == {
        "past the viewport",
        "past its container",
        "clipped text",
        "page wider than the viewport",
    }
