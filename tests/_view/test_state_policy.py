"""The initial state as browsable tables (filter, pages; in the written bundle too), the
policy with an anchor per rule that task pages link to, and the rollout statistics page."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from veritask._view import Site, _state_pages, build_app, open_pages
from veritask._view._state_pages import filter_rows, policy_path, rule_anchor, state_path
from veritask.env import CompiledDomain, Environment
from veritask.rollout import rollout_stats
from veritask.task import DatasetDir, Trajectory, load_dataset

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def client(dataset: Path) -> TestClient:
    return TestClient(build_app(Site(open_pages(dataset))), base_url=LOCAL)


def _state_rows(dataset: Path, digest: str) -> dict[str, list[dict[str, object]]]:
    ds = DatasetDir(dataset)
    env = Environment(CompiledDomain.from_spec(ds.domain_spec("mock")))
    try:
        env.restore(ds.read_state(digest))
        return {t.name: env.rows(t.name) for t in env.spec.tables}
    finally:
        env.close()


def _body_rows(page: str) -> list[str]:
    body = page.split('<table id="state-rows">', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr>(?:<td.*?</td>)+</tr>", body.split("<tbody>", 1)[1])


def test_task_page_links_its_state_and_rules(client: TestClient, dataset: Path) -> None:
    exercised = [p for p in load_dataset(dataset) if p.rules_exercised]
    assert exercised, "the fixture has a task that exercises a rule"
    for pkg in exercised:
        page = client.get(f"/task/{pkg.id}.html").text
        assert f'class="state-link" href="../{state_path(pkg.origin)}"' in page
        for rule in pkg.rules_exercised:
            href = f"../{policy_path('mock')}#{rule_anchor(rule)}"
            assert f'<a class="rule" href="{href}">{rule}</a>' in page
            policy = client.get(f"/{policy_path('mock')}").text
            assert f'id="{rule_anchor(rule)}"' in policy


def test_policy_page_anchors_every_rule_once(client: TestClient, dataset: Path) -> None:
    spec = DatasetDir(dataset).domain_spec("mock")
    page = client.get(f"/{policy_path('mock')}").text
    for rule in spec.rules:
        assert page.count(f'id="{rule_anchor(rule.id)}"') == 1
    assert "<h2>Section 4: Standard Operating Procedures (SOP)</h2>" in page


def test_state_page_shows_every_table_with_filter_and_pages(
    client: TestClient, dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = load_dataset(dataset)[0].origin
    tables = _state_rows(dataset, digest)
    url = f"/{state_path(digest)}"
    for name, rows in tables.items():
        page = client.get(url, params={"table": name}).text
        assert f'data-table="{name}">{name} <span class="muted">{len(rows)}</span>' in page
        assert len(_body_rows(page)) == min(len(rows), _state_pages.PAGE_ROWS)
    name, rows = max(tables.items(), key=lambda kv: len(kv[1]))
    needle = str(next(v for v in rows[-1].values() if isinstance(v, str)))
    page = client.get(url, params={"table": name, "q": needle.upper()}).text
    expected = filter_rows(rows, needle)
    assert len(expected) > 0 and f'<span id="state-found">{len(expected)}</span>' in page
    monkeypatch.setattr(_state_pages, "PAGE_ROWS", 2)
    last = (len(rows) + 1) // 2
    page = client.get(url, params={"table": name, "page": str(last + 5)}).text
    assert f"page {last} of {last}" in page and len(_body_rows(page)) == len(rows) - 2 * (last - 1)
    assert "next →" not in page and "← previous" in page


def test_written_state_page_embeds_its_rows(dataset: Path, tmp_path: Path) -> None:
    Site(open_pages(dataset)).write(tmp_path)
    digest = load_dataset(dataset)[0].origin
    page = (tmp_path / state_path(digest)).read_text(encoding="utf-8")
    raw = re.search(r'<script type="application/json" id="state-data">(.*?)</script>', page)
    assert raw is not None and (tmp_path / "static" / "state.js").is_file()
    data = json.loads(html_lib.unescape(raw.group(1)))
    tables = _state_rows(dataset, digest)
    assert {n: len(t["rows"]) for n, t in data["tables"].items()} == {
        n: len(r) for n, r in tables.items()
    }


def test_statistics_page(trajectories: Path, dataset: Path) -> None:
    site = Site(open_pages(trajectories, dataset=dataset))
    page = TestClient(build_app(site), base_url=LOCAL).get("/stats.html").text
    rows = [Trajectory.model_validate_json(x) for x in trajectories.read_text().splitlines()]
    stats = rollout_stats(rows)
    for agent, block in stats["agents"].items():
        assert f'<h2>{agent} <span class="muted">{block["episodes"]} episode(s)' in page
    assert page.count('<svg class="chart"') == 3 * len(stats["agents"])
