"""Trajectories link to their task pages when the dataset is known; logic families show their
gate records; every kind of source writes a static bundle equal to the server's pages."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from veritask._view import Site, ViewError, build_app, open_pages
from veritask.task import Trajectory

LOCAL = "http://127.0.0.1"
_EMBEDDED = re.compile(
    r'<script type="application/json" id="state-data">.*?state\.js"></script>\n', re.S
)
"""What only a written state page carries: its rows for the page's script (no server there)."""


def _client(site: Site) -> TestClient:
    return TestClient(build_app(site), base_url=LOCAL)


def _trajectories(path: Path) -> list[Trajectory]:
    return [Trajectory.model_validate_json(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("explicit", [False, True])
def test_trajectory_pages_link_to_task_pages(
    explicit: bool, trajectories: Path, dataset: Path
) -> None:
    """The dataset next to the file is found (or given); each trajectory links to its task."""
    site = Site(open_pages(trajectories, dataset=dataset if explicit else None))
    client = _client(site)
    rows = _trajectories(trajectories)
    summary = client.get("/index.html").text
    assert f"run on the dataset <b>{dataset.name}</b>" in summary
    for index, traj in enumerate(rows):
        html = client.get(f"/trajectory/{index}.html").text
        link = re.search(r'<a class="task-link" href="([^"]+)"', html)
        assert link is not None and link.group(1) == f"../dataset/task/{traj.task_id}.html"
        task = client.get(f"/dataset/task/{traj.task_id}.html")
        assert task.status_code == 200 and f"<h1>{traj.task_id}" in task.text
        back = re.findall(r'href="\.\./\.\./trajectory/(\d+)\.html"', task.text)
        assert [int(i) for i in back] == [
            i for i, t in enumerate(rows) if t.task_id == traj.task_id
        ]
        assert f'href="dataset/task/{traj.task_id}.html"' in summary
        assert "Final state → target" in html  # the found dataset also gives the final diff


def test_trajectories_without_a_dataset_have_no_task_links(
    trajectories: Path, tmp_path: Path
) -> None:
    alone = tmp_path / "alone.jsonl"
    shutil.copy(trajectories, alone)
    site = Site(open_pages(alone))
    assert not [p for p in site.pages.paths() if p.startswith("dataset/")]
    html = _client(site).get("/trajectory/0.html").text
    assert 'class="task-link"' not in html and "Pass --dataset" in html


def test_a_dataset_shows_the_trajectories_it_holds(dataset: Path, tmp_path: Path) -> None:
    """A dataset directory with trajectories.jsonl (as an evolve run writes) mounts them."""
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    shutil.copy(dataset.parent / "oracle.jsonl", copy / "trajectories.jsonl")
    site = Site(open_pages(copy))
    client = _client(site)
    first = _trajectories(copy / "trajectories.jsonl")[0]
    html = client.get("/trajectories/trajectory/0.html").text
    assert f'href="../../task/{first.task_id}.html"' in html
    task = client.get(f"/task/{first.task_id}.html").text
    assert 'href="../trajectories/trajectory/0.html"' in task


def _family_rows(html: str) -> list[str]:
    return re.findall(r'<a href="family/([^"]+)\.html">', html)


def test_logic_gate_records(logic_file: Path, gate_records: Path) -> None:
    records = {
        r["family"]: r for r in (json.loads(p.read_text()) for p in gate_records.glob("*.json"))
    }
    assert len(records) == 2
    client = _client(Site(open_pages(logic_file)))  # gates/ next to the file is found
    everything = _family_rows(client.get("/index.html").text)
    for state in ("passed", "failed", "none"):
        expected = [
            f
            for f in everything
            if (f not in records if state == "none" else f in records)
            and (state == "none" or records[f]["passed"] == (state == "passed"))
        ]
        assert _family_rows(client.get(f"/index.html?gates={state}").text) == expected, state
    for family, record in records.items():
        html = client.get(f"/family/{family}.html").text
        verdict = "passed" if record["passed"] else "failed"
        assert f'class="{"ok" if record["passed"] else "bad"}">{verdict}</b>' in html
        for name in record["gates"]["consensus"]["validators"]:
            assert name in html
        for name, reason in record["skipped"].items():
            assert re.search(rf"<th>{name}</th>\s*<td class=\"muted\">skipped</td>", html)
            assert reason in html
    other = next(f for f in everything if f not in records)
    assert "No gate record for this family" in client.get(f"/family/{other}.html").text


def test_validator_agreement_on_instance_pages(logic_file: Path) -> None:
    client = _client(Site(open_pages(logic_file)))
    lines = logic_file.read_text().splitlines()
    for number in range(1, len(lines) + 1, 7):
        html = client.get(f"/instance/{number}.html").text
        agreement = re.findall(r'class="(ok|bad)">(agrees|disagrees)</td>', html)
        assert agreement and all(word == "agrees" for _, word in agreement), number


def test_gates_only_with_a_logic_file(dataset: Path, gate_records: Path) -> None:
    with pytest.raises(ViewError, match="--gates"):
        open_pages(dataset, gates=gate_records)


@pytest.mark.parametrize("fixture", ["trajectories", "logic_file", "evolve_run", "blueprint_run"])
def test_static_bundle_equals_the_server(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    site = Site(open_pages(request.getfixturevalue(fixture)))
    client = _client(site)
    assert site.write(tmp_path / "site") == len(site.pages.paths())
    written = sorted(
        p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*.html")
    )
    assert written == sorted(site.pages.paths())
    for page in written:
        written_page = (tmp_path / "site" / page).read_text(encoding="utf-8")
        assert _EMBEDDED.sub("", written_page) == client.get(f"/{page}").text
