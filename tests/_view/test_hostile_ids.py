"""Ids from the files being viewed never steer where the viewer reads or writes.

Every id that becomes part of a path goes through ``slug``; ``Site.write`` also refuses any
page path leading outside ``--out``, and an evolve run's unit ids that would name a file
outside its run folder are not read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import ClassVar

import pytest

from veritask._view import Site, open_pages
from veritask._view._pages import SLUG_MAX, Page, Query, slug
from veritask._view._site import inside
from veritask.evolve import RUN_DIR

HOSTILE = ["../../x", "/etc/x", "a/../../b", "..", ".", "", "a\0b", "~", "C:\\x", "x" * 300]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_slug_is_one_plain_name(text: str) -> None:
    name = slug(text)
    assert name not in ("", ".", "..")
    assert "/" not in name and "\\" not in name and "\0" not in name
    assert not name.startswith(".") and len(name) <= SLUG_MAX
    assert Path(name).name == name and not Path(name).is_absolute()


def test_distinct_ids_get_distinct_slugs_and_safe_ids_keep_theirs() -> None:
    ids = [*HOSTILE, "a/b", "a_b", "a~2fb", "a.b", "x" * 299, "plan-00.iter1"]
    assert len({slug(i) for i in ids}) == len(ids)
    assert slug("plan-00.iter1") == "plan-00.iter1"
    assert slug("retail-s2-000003") == "retail-s2-000003"


@pytest.mark.parametrize("path", ["../x.html", "/etc/x.html", "a/../../b.html", "a\0.html"])
def test_inside_refuses_a_path_leading_out(tmp_path: Path, path: str) -> None:
    with pytest.raises(ValueError, match="page path"):
        inside(tmp_path / "out", path)


class _Hostile:
    """Pages whose paths were not made safe (as a new page kind's bug would give)."""

    kind = "dataset"
    name = "hostile"
    nav: ClassVar[list[tuple[str, str]]] = []

    def paths(self) -> list[str]:
        return ["index.html", "../escaped.html"]

    def page(self, path: str, query: Query) -> Page | None:
        return Page("base.html", path)


def test_site_write_refuses_a_page_outside_out(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="leads outside"):
        Site(_Hostile()).write(tmp_path / "out")
    assert not (tmp_path / "escaped.html").exists()


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_an_evolve_run_with_hostile_unit_ids_writes_only_under_out(
    evolve_run: Path, tmp_path: Path
) -> None:
    run = Path(shutil.copytree(evolve_run, tmp_path / "box" / "run"))
    manifest_path = run / RUN_DIR / "run-manifest.json"
    manifest = json.loads(manifest_path.read_text())
    iterations = [u for u in manifest["units"] if u != "plans"]
    body = (run / RUN_DIR / f"{iterations[0]}.json").read_text()
    outside = tmp_path / "box" / "x.json"  # what "../../x" names from the run folder
    outside.write_text(body)
    odd = ["sub/dir", "y" * 200, "~tilde"]
    for unit_id in odd:
        (run / RUN_DIR / f"{unit_id}.json").parent.mkdir(parents=True, exist_ok=True)
        (run / RUN_DIR / f"{unit_id}.json").write_text(body)
    manifest["units"] += ["../../x", "/etc/x", "a/../../b", *odd]
    manifest_path.write_text(json.dumps(manifest))
    before = _files(tmp_path)
    out = tmp_path / "box" / "site"
    site = Site(open_pages(run))
    written = site.write(out)
    new = _files(tmp_path) - before
    assert new and all(p.resolve().is_relative_to(out.resolve()) for p in new)
    pages = {p.relative_to(out).as_posix() for p in new}
    assert written == len(site.pages.paths())
    assert {f"iteration/{slug(u)}.html" for u in [*iterations, *odd]} <= pages
    assert not any(p.rpartition("/")[2] == "x.html" for p in pages)  # ../../x was not read
    assert all(len(p.rpartition("/")[2]) <= SLUG_MAX + len(".html") for p in pages)
