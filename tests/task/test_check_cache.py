"""What makes ``check`` fast must not make it trust more: schema verdicts are kept by content
digest and read on one shared connection, and certification and grounding share one replay."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests._tamper import drop_trigger

from veritask._util import sha256
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.synth import generate
from veritask.task import DatasetDir, certify, check_dataset, grounding, load_dataset
from veritask.task._grounded import _in_text, certify_grounded
from veritask.task._integrity import StateVerifier, reference_schema
from veritask.task._package import TaskPackage


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cache") / "travel"
    generate("travel", 8, 5, root)
    return root


def _edit_in_place(image: bytes) -> bytes:
    """The same image with one trigger's SQL edited byte for byte in ``sqlite_master`` (its
    schema cookie unchanged, so a connection that parsed the real schema keeps its parse)."""
    at = image.index(b"CREATE TRIGGER")
    return image[:at] + b"create" + image[at + 6 :]


def _verifier() -> StateVerifier:
    return StateVerifier(reference_schema(CompiledDomain.from_spec(load_domain("travel"))))


def test_a_cached_verdict_is_never_used_for_other_bytes(pristine: Path) -> None:
    ds = DatasetDir(pristine)
    good = ds.read_state(load_dataset(pristine)[0].target)
    name = sha256(good)
    verifier = _verifier()
    assert verifier.problem(good, name) is None
    for forged in (drop_trigger(good), _edit_in_place(good)):
        under_good_name = verifier.problem(forged, name)
        assert under_good_name is not None and "does not hash to its name" in under_good_name
        own = verifier.problem(forged, sha256(forged))
        assert own is not None and "another schema than the spec's" in own
    assert verifier.problem(good, name) is None
    verifier.close()


def test_a_broken_image_does_not_spoil_the_next_verdict(pristine: Path) -> None:
    ds = DatasetDir(pristine)
    good = ds.read_state(load_dataset(pristine)[0].origin)
    junk = b"not a database" * 400
    verifier = _verifier()
    problem = verifier.problem(junk, sha256(junk))
    assert problem is not None and "not a SQLite image" in problem
    assert verifier.problem(good, sha256(good)) is None
    verifier.close()


@pytest.mark.parametrize("forge", [drop_trigger, _edit_in_place])
def test_a_forged_target_schema_is_caught_when_renamed_and_resealed(
    pristine: Path, tmp_path: Path, forge: Callable[[bytes], bytes]
) -> None:
    """The forged target comes after its origin, whose schema the shared connection has parsed
    already: the check still reads the target's own ``sqlite_master``."""
    data = Path(shutil.copytree(pristine, tmp_path / "ds"))
    ds = DatasetDir(data)
    packages = load_dataset(data)
    first = packages[0]
    weak = ds.put_state(forge(ds.read_state(first.target)))
    forged = [p.model_copy(update={"target": weak}) if p.id == first.id else p for p in packages]
    ds.manifest.write_text("".join(p.model_dump_json() + "\n" for p in forged))
    ds.seal(forged)
    report = check_dataset(data)
    details = [f["detail"] for f in report.failures if f["id"] == first.id]
    assert any(d.startswith("target: state") and "another schema" in d for d in details)
    assert report.certified == len(packages) - 1


def _separately(
    pkg: TaskPackage, env: Environment, origin: bytes, target: bytes
) -> tuple[bool, list[str] | None]:
    cert = certify(pkg, env, origin, target)
    if not cert.certified:
        return False, None
    return True, [u.describe() for u in grounding(pkg, env, origin)]


@pytest.mark.parametrize("domain", ["retail", "clinic"])
def test_one_replay_certifies_and_grounds_as_two_do(domain: str, tmp_path: Path) -> None:
    root = tmp_path / domain
    generate(domain, 12, 3, root)
    ds = DatasetDir(root)
    packages = load_dataset(root)
    broken = packages[0].witness[-1].model_copy(update={"ok": not packages[0].witness[-1].ok})
    packages.append(packages[0].model_copy(update={"witness": [*packages[0].witness[:-1], broken]}))
    trimmed = packages[1].model_copy(update={"witness": packages[1].witness[:-1]})
    packages.append(trimmed)
    env = Environment(CompiledDomain.from_spec(ds.domain_spec(domain)))
    for pkg in packages:
        origin, target = ds.read_state(pkg.origin), ds.read_state(pkg.target)
        cert, found = certify_grounded(pkg, env, origin, target)
        both = [u.describe() for u in found] if found is not None else None
        assert (cert.certified, both) == _separately(pkg, env, origin, target)
    env.close()


_ALPHABET = st.sampled_from(list("ab1_ -.é#"))


@settings(max_examples=500, deadline=None)
@given(st.text(_ALPHABET, max_size=10), st.text(_ALPHABET, max_size=4))
def test_a_stated_value_is_found_exactly_where_the_word_pattern_finds_it(
    text: str, value: str
) -> None:
    pattern = rf"(?<![A-Za-z0-9_]){re.escape(value)}(?![A-Za-z0-9_])"
    assert _in_text(value, text) == (re.search(pattern, text) is not None)
