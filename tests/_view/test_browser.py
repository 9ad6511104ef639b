"""Headless Chromium through the viewer: the task table, a task page, a trajectory page and its
link back to the task, the static bundle's filter from disk, a written state page's filter and
pages from disk, and an evolve run's bundle from disk. Skipped where Debian's ``chromium`` is
not installed.

With ``VERITASK_VIEW_SCREENSHOTS=DIR`` the task and trajectory screenshots are also saved as
``DIR/view-task.png`` and ``DIR/view-trajectory.png`` (the README shows them; with Pillow they
are reduced to a 64-colour palette to keep them small)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from veritask._view import Site, build_app, open_pages
from veritask._view._state_pages import state_path
from veritask.task import TaskPackage, load_dataset

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--hide-scrollbars",
]
WINDOW = "--window-size=1200,900"
SHOTS = os.environ.get("VERITASK_VIEW_SCREENSHOTS")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def _chromium(tmp: Path, *args: str, window: str = WINDOW) -> str:
    assert CHROMIUM is not None
    profile = tmp / "profile"
    command = [CHROMIUM, *FLAGS, window, f"--user-data-dir={profile}", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(dataset: Path, trajectories: Path) -> Iterator[dict[str, str]]:
    """The dataset and the trajectories, each served on its own loopback port."""
    urls, servers = {}, []
    for name, site in (
        ("dataset", Site(open_pages(dataset))),
        ("trajectories", Site(open_pages(trajectories, dataset=dataset))),
    ):
        port = _free_port()
        config = uvicorn.Config(build_app(site), host="127.0.0.1", port=port, log_level="error")
        srv = uvicorn.Server(config)
        threading.Thread(target=srv.run, daemon=True).start()
        servers.append(srv)
        urls[name] = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 20
    while not all(s.started for s in servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    yield urls
    for srv in servers:
        srv.should_exit = True


def _save_small(shot: Path, out: Path) -> None:
    """Copy a screenshot, as a 64-colour palette PNG when Pillow is installed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        from PIL import Image
    except ImportError:
        shutil.copyfile(shot, out)
        return
    with Image.open(shot) as image:
        image.convert("RGB").quantize(64).save(out, optimize=True)


def _showcase(packages: list[TaskPackage]) -> TaskPackage:
    """The task whose first rejected call comes earliest on its page (short texts first)."""
    rejected = [
        (next(i for i, c in enumerate(p.witness) if not c.ok), len(p.task_description), p.id, p)
        for p in packages
        if any(not c.ok for c in p.witness)
    ]
    return min(rejected)[3] if rejected else packages[0]


def test_task_table_to_task_page_and_trajectory(
    server: dict[str, str], dataset: Path, trajectories: Path, tmp_path: Path
) -> None:
    packages = load_dataset(dataset)
    table = _chromium(tmp_path, "--dump-dom", server["dataset"] + "tasks.html")
    links = re.findall(r'href="(task/[^"]+\.html)"', table)
    assert links == [f"task/{p.id}.html" for p in packages]
    shown = _showcase(packages)
    task = _chromium(tmp_path, "--dump-dom", server["dataset"] + f"task/{shown.id}.html")
    assert "Origin → target" in task and "Witness" in task
    summary = _chromium(tmp_path, "--dump-dom", server["trajectories"] + "index.html")
    lines = trajectories.read_text(encoding="utf-8").splitlines()
    moving = next(i for i, t in enumerate(map(json.loads, lines)) if t["initial_distance"] > 1)
    first = re.search(rf'href="(trajectory/{moving}\.html)"', summary)
    assert first is not None
    trajectory = _chromium(tmp_path, "--dump-dom", server["trajectories"] + first.group(1))
    back = re.search(r'<a class="task-link" href="\.\./(dataset/task/([^"]+)\.html)"', trajectory)
    assert back is not None, "the trajectory page links to its task page"
    task_page = _chromium(tmp_path, "--dump-dom", server["trajectories"] + back.group(1))
    assert f"<h1>{back.group(2)}" in task_page and "Witness" in task_page
    shots = {  # the task page down to its first rejected call
        "view-task.png": (server["dataset"] + f"task/{shown.id}.html", "1200,1500"),
        "view-trajectory.png": (server["trajectories"] + first.group(1), "1200,900"),
    }
    for name, (url, size) in shots.items():
        _chromium(tmp_path, f"--screenshot={tmp_path / name}", url, window=f"--window-size={size}")
        assert (tmp_path / name).stat().st_size > 10_000
        if SHOTS:
            _save_small(tmp_path / name, Path(SHOTS) / name)


def test_evolve_bundle_from_disk(evolve_run: Path, tmp_path: Path) -> None:
    """An evolve run's written site: an iteration page's accepted task opens from disk."""
    site = Site(open_pages(evolve_run))
    site.write(tmp_path / "site")
    unit = next(p for p in site.pages.paths() if p.startswith("iteration/"))
    dom = _chromium(tmp_path, "--dump-dom", (tmp_path / "site" / unit).as_uri())
    link = re.search(r'href="\.\./(dataset/task/([^"]+)\.html)"', dom)
    assert link is not None
    task = _chromium(tmp_path, "--dump-dom", (tmp_path / "site" / link.group(1)).as_uri())
    assert f"<h1>{link.group(2)}" in task and "Origin → target" in task


def test_static_bundle_filters_from_disk(dataset: Path, tmp_path: Path) -> None:
    site = Site(open_pages(dataset))
    site.write(tmp_path / "site")
    url = (tmp_path / "site" / "tasks.html").as_uri() + "?difficulty=L3"
    dom = _chromium(tmp_path, "--dump-dom", url)
    rows = re.findall(r"<tr data-row[^>]*>", dom)
    visible = [r for r in rows if not re.search(r'\shidden(=""|>|\s)', r)]
    expected = [p for p in load_dataset(dataset) if p.difficulty == "L3"]
    assert len(rows) == len(load_dataset(dataset)) and len(visible) == len(expected)
    assert f'<span id="shown">{len(expected)}</span>' in dom


def test_static_state_page_filters_and_pages_from_disk(dataset: Path, tmp_path: Path) -> None:
    """A written state page draws the table, filter and page the query asks for (its script
    reads the rows embedded in the page): the same figures the server shows."""
    site = Site(open_pages(dataset))
    site.write(tmp_path / "site")
    digest = load_dataset(dataset)[0].origin
    path = state_path(digest)
    query = {"table": "books", "q": "emma"}
    served = site.render(path, query)
    assert served is not None
    expected = re.search(r'<span id="state-found">(\d+)</span>', served)
    assert expected is not None and int(expected.group(1)) > 0
    url = (tmp_path / "site" / path).as_uri() + "?table=books&q=emma"
    dom = _chromium(tmp_path, "--dump-dom", url)
    assert f'<span id="state-found">{expected.group(1)}</span>' in dom
    body = dom.split('<table id="state-rows">', 1)[1].split("</table>", 1)[0]
    assert len(re.findall(r"<tr>", body.split("<tbody>", 1)[1])) == int(expected.group(1))
    chosen = re.findall(r'<a [^>]*class="here"[^>]*>', dom.split('id="state-tables"', 1)[1])
    assert len(chosen) == 1 and 'data-table="books"' in chosen[0]
