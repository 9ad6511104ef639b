"""Evolve and blueprint run directories in the viewer: every page renders, the filters return
the right rows, accepted tasks link to the final dataset's pages, the stage report's figures and
the tool graph show."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from veritask._view import Site, build_app, detect, open_pages
from veritask._view._pages import number
from veritask.blueprint import build_tool_graph, stage_report
from veritask.evolve import RUN_DIR, read_report
from veritask.policy import load_spec
from veritask.task import load_dataset

LOCAL = "http://127.0.0.1"


def _client(path: Path) -> tuple[Site, TestClient]:
    site = Site(open_pages(path))
    return site, TestClient(build_app(site), base_url=LOCAL)


@pytest.fixture(scope="module")
def evolve_client(evolve_run: Path) -> TestClient:
    return _client(evolve_run)[1]


@pytest.fixture(scope="module")
def blueprint_client(blueprint_run: Path) -> TestClient:
    return _client(blueprint_run)[1]


def _unit(run: Path, unit_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / RUN_DIR / f"{unit_id}.json").read_text())
    return data


def _rows(html: str, table: str) -> list[str]:
    """The ``data-row`` rows of the table with id ``table``, as HTML."""
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr data-row.*?</tr>", body, re.DOTALL)


def _first(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found is not None, pattern
    return found.group(1)


@pytest.mark.parametrize("fixture", ["evolve_run", "blueprint_run"])
def test_every_page_renders(fixture: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(fixture)
    assert detect(path) == fixture.removesuffix("_run")
    site, client = _client(path)
    paths = site.pages.paths()
    assert len(paths) == len(set(paths))
    for page in paths:
        response = client.get(f"/{page}")
        assert response.status_code == 200, page
        assert "<h1>" in response.text
        for link in re.findall(r'href="([^"#?]+\.html)"', response.text):
            target = (Path("/site") / page).parent / link
            resolved = target.resolve().relative_to("/site").as_posix()
            assert resolved in paths, (page, link)


def test_evolve_overview_and_stream_filter(evolve_client: TestClient, evolve_run: Path) -> None:
    report = read_report(evolve_run)
    html = evolve_client.get("/index.html").text
    assert f"{report['tasks']} tasks in the final dataset" in html
    units = [f"{r['stream']}.iter{r['iteration']}" for r in report["iterations"]]
    assert [_first(r'iteration/([^"]+)\.html', r) for r in _rows(html, "iterations")] == units
    for stream in ("plan-00", "plan-01"):
        shown = _rows(evolve_client.get(f"/index.html?stream={stream}").text, "iterations")
        assert len(shown) == sum(1 for u in units if u.startswith(stream)) > 0
        assert all(f'data-stream="{stream}"' in row for row in shown)
    for row in report["iterations"]:
        accepted = re.search(
            rf"iteration/{row['stream']}\.iter{row['iteration']}\.html.*?</tr>", html, re.DOTALL
        )
        assert accepted is not None
        cells = re.findall(r'<td class="num">(\d+)</td>', accepted.group(0))
        assert int(cells[-2]) == row["accepted"]  # the accepted column, before plan changes


def test_evolve_iteration_rows_filters_and_task_links(
    evolve_client: TestClient, evolve_run: Path
) -> None:
    final = {p.id for p in load_dataset(evolve_run)}
    lines = (evolve_run / "trajectories.jsonl").read_text().splitlines()
    verified = [json.loads(line)["task_id"] for line in lines]
    assert verified
    statuses: set[str] = set()
    for row in read_report(evolve_run)["iterations"]:
        unit_id = f"{row['stream']}.iter{row['iteration']}"
        unit = _unit(evolve_run, unit_id)
        page = f"/iteration/{unit_id}.html"
        html = evolve_client.get(page).text
        rejected = [v["id"] for v in unit["verification"] if v["verdict"] == "FAIL"]
        solved = [r["id"] for r in unit["rollouts"] if r["outcome"] == "SUCCESS"]
        for status, expected in (("rejected", rejected), ("SUCCESS", solved)):
            rows = _rows(evolve_client.get(f"{page}?status={status}").text, "candidates")
            assert [_first(r"(mock-[\w-]+)", r) for r in rows] == expected
            statuses |= {status} if expected else set()
        for verdict in unit["verification"]:
            for reason in verdict["reasons"]:
                assert str(escape(reason["detail"])) in html
        for item in unit["accepted"]:
            task_id = item["package"]["id"]
            link = f'href="../dataset/task/{task_id}.html"'
            assert (link in html) == (task_id in final)
            if item["trajectory"] is not None and task_id in final:
                line = verified.index(task_id)
                assert f'href="../trajectories/trajectory/{line}.html"' in html
        for key in unit["plan_diff"]:
            assert f"<code>{key}</code>" in html
    assert statuses == {"rejected", "SUCCESS"}, "the run has rejected and solved candidates"
    task = load_dataset(evolve_run)[0]
    page = evolve_client.get(f"/dataset/task/{task.id}.html").text
    assert str(escape(task.task_description.splitlines()[0])) in page


def test_evolve_trajectories_link_to_their_tasks(
    evolve_client: TestClient, evolve_run: Path
) -> None:
    lines = (evolve_run / "trajectories.jsonl").read_text().splitlines()
    assert lines
    summary = evolve_client.get("/trajectories/index.html").text
    for index, line in enumerate(lines):
        task_id = json.loads(line)["task_id"]
        assert f'href="../dataset/task/{task_id}.html"' in summary
        page = evolve_client.get(f"/trajectories/trajectory/{index}.html").text
        assert f'href="../../dataset/task/{task_id}.html"' in page


def test_blueprint_stage_report(blueprint_client: TestClient, blueprint_run: Path) -> None:
    report = stage_report(blueprint_run)
    html = blueprint_client.get("/index.html").text
    for stage, section in report["stages"].items():
        row = re.search(rf"<th>{stage}</th>.*?</tr>", html, re.DOTALL)
        assert row is not None and 'class="ok">complete' in row.group(0)
        for key, value in section.items():
            if not isinstance(value, list):
                assert f"{key.replace('_', ' ')} <b>{number(value)}</b>" in row.group(0)
    for service in report["services"]:
        assert f'href="service/{service["service"]}.html"' in html
    assert '<svg class="graph"' in html  # the entity graph


def test_blueprint_filter_shows_reasons(blueprint_client: TestClient, blueprint_run: Path) -> None:
    units = json.loads((blueprint_run / "blueprints.json").read_text())["units"]
    for status in ("accepted", "rejected"):
        rows = _rows(blueprint_client.get(f"/blueprints.html?status={status}").text, "blueprints")
        expected = [u for u in units if u["status"] == status]
        assert len(rows) == len(expected) > 0
        for row, unit in zip(rows, expected, strict=True):
            assert unit["unit"] in row and f'data-status="{status}"' in row
            for reason in unit.get("reasons", []):
                assert str(escape(reason)) in row
    assert len(_rows(blueprint_client.get("/blueprints.html").text, "blueprints")) == len(units)


def test_blueprint_service_tool_graph(blueprint_client: TestClient, blueprint_run: Path) -> None:
    for service in stage_report(blueprint_run)["services"]:
        graph = build_tool_graph(load_spec(blueprint_run / service["spec_path"]))
        html = blueprint_client.get(f"/service/{service['service']}.html").text
        svg = html.split('<svg class="graph"', 1)[1].split("</svg>", 1)[0]
        assert sorted(re.findall(r"<text[^>]*>([^<]+)</text>", svg)) == sorted(graph.nodes)
        assert svg.count('<path class="edge') == graph.number_of_edges()
        assert "One source, every tool reachable from it, no cycle." in html
