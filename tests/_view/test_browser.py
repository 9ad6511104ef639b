"""Headless Chromium through the viewer: the task table, a task page, a trajectory page, and the
static bundle's filter from disk. Skipped where Debian's ``chromium`` is not installed."""

from __future__ import annotations

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
from veritask.task import load_dataset

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
    "--window-size=1280,1000",
]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def _chromium(tmp: Path, *args: str) -> str:
    assert CHROMIUM is not None
    profile = tmp / "profile"
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
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


def test_task_table_to_task_page_and_trajectory(
    server: dict[str, str], dataset: Path, tmp_path: Path
) -> None:
    table = _chromium(tmp_path, "--dump-dom", server["dataset"] + "tasks.html")
    links = re.findall(r'href="(task/[^"]+\.html)"', table)
    assert len(links) == len(load_dataset(dataset))
    task = _chromium(tmp_path, "--dump-dom", server["dataset"] + links[0])
    assert "Origin → target" in task and "Witness" in task
    shots = {"task.png": server["dataset"] + links[0], "trajectory.png": ""}
    summary = _chromium(tmp_path, "--dump-dom", server["trajectories"] + "index.html")
    first = re.search(r'href="(trajectory/\d+\.html)"', summary)
    assert first is not None
    shots["trajectory.png"] = server["trajectories"] + first.group(1)
    for name, url in shots.items():
        _chromium(tmp_path, f"--screenshot={tmp_path / name}", url)
        assert (tmp_path / name).stat().st_size > 10_000


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
