"""Every page of the viewer renders; filters select the right rows; diffs show the right rows;
the static bundle is the server's pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from veritask._view import Site, ViewError, build_app, detect, open_pages
from veritask._view._diff import table_view
from veritask._view._pages import fixed_columns
from veritask.domains import load_domain
from veritask.env import Layout, Snapshot, diff
from veritask.task import DatasetDir, Trajectory, load_dataset

LOCAL = "http://127.0.0.1"
_EMBEDDED = re.compile(
    r'<script type="application/json" id="state-data">.*?state\.js"></script>\n', re.S
)
"""What only a written state page carries: its rows for the page's script (no server there)."""


@pytest.fixture(scope="module")
def dataset_site(dataset: Path) -> Site:
    return Site(open_pages(dataset, check=True))


@pytest.fixture(scope="module")
def dataset_client(dataset_site: Site) -> TestClient:
    return TestClient(build_app(dataset_site), base_url=LOCAL)


@pytest.fixture(scope="module")
def trajectory_site(trajectories: Path, dataset: Path) -> Site:
    return Site(open_pages(trajectories, dataset=dataset))


def _task_ids(html: str) -> list[str]:
    return re.findall(r'<a href="task/([^"]+)\.html">', html)


def _either(value: str) -> str:
    """A cell's pattern whether it shows a value as it is or as one side of a change."""
    other = r"(?:(?!</td>).)*?"
    return rf"(?:{value}|<del>{value}</del> → <ins>{other}</ins>|<del>{other}</del> → <ins>{value}</ins>)"


def _cell(value: object) -> str:
    return '<span class="null">null</span>' if value is None else re.escape(str(value))


def test_detect_each_kind(dataset: Path, trajectories: Path, logic_file: Path) -> None:
    assert detect(dataset) == "dataset"
    assert detect(trajectories) == "trajectories"
    assert detect(logic_file) == "logic"
    with pytest.raises(ViewError, match="manifest"):
        detect(dataset / "states")
    with pytest.raises(ViewError, match="--dataset"):
        open_pages(logic_file, dataset=dataset)


@pytest.mark.parametrize("fixture", ["dataset", "trajectories", "logic_file"])
def test_every_page_renders(fixture: str, request: pytest.FixtureRequest, dataset: Path) -> None:
    path = request.getfixturevalue(fixture)
    extra = dataset if fixture == "trajectories" else None
    site = Site(open_pages(path, dataset=extra))
    client = TestClient(build_app(site), base_url=LOCAL)
    assert client.get("/").status_code == 200
    for page in site.pages.paths():
        response = client.get(f"/{page}")
        assert response.status_code == 200, page
        assert "<h1>" in response.text
    assert client.get("/static/style.css").headers["content-type"].startswith("text/css")
    assert client.get("/nope.html").status_code == 404
    assert client.get("/static/../run.json").status_code == 404


def test_read_only_and_loopback_only(dataset_client: TestClient, dataset_site: Site) -> None:
    assert dataset_client.post("/index.html").status_code == 405
    other = TestClient(build_app(dataset_site), base_url="http://evil.example")
    assert other.get("/index.html").status_code == 400


def test_filters_return_the_right_rows(dataset_client: TestClient, dataset: Path) -> None:
    packages = load_dataset(dataset)
    everything = _task_ids(dataset_client.get("/tasks.html").text)
    assert everything == [p.id for p in packages]
    cases = {
        "difficulty=L3": [p.id for p in packages if p.difficulty == "L3"],
        "tag=adversarial": [p.id for p in packages if "adversarial" in p.tags],
        "rule=LATE_FEE": [p.id for p in packages if "LATE_FEE" in p.rules_exercised],
        "refusal=yes": [p.id for p in packages if p.refusal],
        "difficulty=L2&refusal=no": [
            p.id for p in packages if p.difficulty == "L2" and not p.refusal
        ],
        "certified=yes": [p.id for p in packages],
        "certified=no": [],
        "q=emma": [p.id for p in packages if "emma" in p.task_description.lower()],
    }
    for query, expected in cases.items():
        assert _task_ids(dataset_client.get(f"/tasks.html?{query}").text) == expected, query
    assert any(cases.values()) and not all(len(v) == len(packages) for v in cases.values())


def test_task_page_shows_the_rows_the_certificate_changes(
    dataset_client: TestClient, dataset: Path
) -> None:
    ds = DatasetDir(dataset)
    layout = Layout.from_spec(ds.domain_spec("mock"))
    for pkg in load_dataset(dataset):
        html = dataset_client.get(f"/task/{pkg.id}.html").text
        gold = diff(
            Snapshot(ds.read_state(pkg.origin), layout), Snapshot(ds.read_state(pkg.target), layout)
        )
        added, removed = html.count('<tr class="added">'), html.count('<tr class="removed">')
        changed = html.count('<tr class="changed">')
        assert added + removed + 2 * changed == gold.distance, pkg.id
        for name, table in gold.tables.items():
            assert f"<h4>{name} " in html
            for row in table.added + table.removed:
                cells = "".join(f"<td[^>]*>{_either(_cell(v))}</td>" for v in row.values())
                assert re.search(cells, html), (pkg.id, name, row)
        assert str(escape(pkg.task_description.splitlines()[0])) in html
        for call in pkg.witness:
            if not call.ok and call.error:
                assert call.error["violated_rule"] in html
                assert str(escape(call.error["hint"])) in html


def test_changed_rows_mark_their_changed_cells(dataset_client: TestClient, dataset: Path) -> None:
    """A task whose witness updates a row shows that row as changed, the new value marked."""
    updated = [
        (pkg.id, call)
        for pkg in load_dataset(dataset)
        for call in pkg.witness
        if call.ok and call.tool.startswith("update_") and isinstance(call.result, dict)
    ]
    assert updated, "the fixture dataset has a task that updates a row"
    task_id, call = updated[0]
    html = dataset_client.get(f"/task/{task_id}.html").text
    assert '<tr class="changed">' in html and "changed before" not in html
    marked = re.findall(r'class="cell-changed"><del>[^<]*</del> → <ins>([^<]*)</ins></td>', html)
    assert any(str(v) in marked for k, v in call.args.items() if k != "id" and v is not None)


def test_trajectory_pages(trajectory_site: Site, trajectories: Path) -> None:
    client = TestClient(build_app(trajectory_site), base_url=LOCAL)
    rows = [Trajectory.model_validate_json(line) for line in trajectories.read_text().splitlines()]
    summary = client.get("/index.html").text
    assert "pass^1" in summary and "pass^2" in summary
    passed = client.get("/index.html?outcome=passed").text
    links = re.findall(r'href="trajectory/(\d+)\.html"', passed)
    assert [int(i) for i in links] == [i for i, t in enumerate(rows) if t.reward == 1.0]
    for index, traj in enumerate(rows):
        html = client.get(f"/trajectory/{index}.html").text
        distance = re.search(r"Final state → target <span class=\"muted\">distance (\d+);", html)
        assert distance is not None and int(distance.group(1)) == traj.final_distance
        assert ("failed" in html) == (traj.reward != 1.0)
        assert "Token usage" in html and "Timeline" in html


def test_static_bundle_equals_the_server(dataset_site: Site, tmp_path: Path) -> None:
    client = TestClient(build_app(dataset_site), base_url=LOCAL)
    count = dataset_site.write(tmp_path / "site")
    assert count == len(dataset_site.pages.paths())
    for page in dataset_site.pages.paths():
        written_page = (tmp_path / "site" / page).read_text(encoding="utf-8")
        assert _EMBEDDED.sub("", written_page) == client.get(f"/{page}").text
    assert (tmp_path / "site" / "static" / "style.css").exists()
    task = (tmp_path / "site" / "task" / "mock-s5-000000.html").read_text()
    assert 'href="../static/style.css"' in task and 'href="../index.html"' in task


def test_logic_pages(logic_file: Path) -> None:
    site = Site(open_pages(logic_file))
    client = TestClient(build_app(site), base_url=LOCAL)
    index = client.get("/index.html").text
    assert "arithmetic_chain" in index
    symbolic = client.get("/index.html?category=symbolic").text
    assert symbolic.count("<tr data-row") < index.count("<tr data-row")
    family = client.get("/family/arithmetic_chain.html").text
    assert "Answers per difficulty" in family and "<svg" in family
    instance = client.get("/instance/1.html").text
    assert "agrees" in instance and "disagrees" not in instance


def test_a_row_the_system_updates_is_one_changed_row() -> None:
    """A travel booking whose approval an effect propagates (``approval_status`` and ``status``
    change, no tool sets the first) pairs into one changed row, not an added and a removed."""
    fixed = fixed_columns(load_domain("travel"))
    assert "approval_status" not in fixed["flight_bookings"]
    before = {"travel_request_id": 7, "flight_code": "UA077", "cost": 1500, "class": "ECONOMY",
              "status": "PENDING", "approval_status": "PENDING", "refund_amount": None}  # fmt: skip
    after = before | {"status": "TICKETED", "approval_status": "APPROVED"}
    view = table_view("flight_bookings", [after], [before], fixed["flight_bookings"])
    assert (view.added, view.removed) == ([], [])
    assert view.changed == [(before, after, {"status", "approval_status"})]
    assert fixed_columns(None) == {}
