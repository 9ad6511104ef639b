"""Logic-family commands that go through the gates: ``gate`` and ``evolve``.

:func:`register` adds both to a click group (the ``logic`` group of the CLI).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from veritask._cli._common import (
    OUT_FILE,
    cache_dir_option,
    echo_json,
    model_failure,
    provider_arg,
    reading,
)
from veritask.logic._evolve import evolve
from veritask.logic._family import Family
from veritask.logic._filefamily import FamilyFileError, FileFamily
from veritask.logic._records import EvolutionResult
from veritask.logic._registry import all_families, get_family
from veritask.logic._reports import FamilyGateRecord
from veritask.logic._run_gates import run_gates
from veritask.logic._sandbox import SandboxUnavailable, allow_unsafe_no_sandbox, require_sandbox
from veritask.logic._settings import EvolveSettings, GateSettings
from veritask.model import ProviderError
from veritask.pipeline import RunConflict


def family_by_id(family_id: str, dirs: tuple[str, ...]) -> Family:
    """A built-in or file family by id, or a clean CLI error."""
    try:
        return get_family(family_id, dirs)
    except KeyError as exc:
        raise click.ClickException(str(exc.args[0])) from None
    except FamilyFileError as exc:
        raise click.ClickException(str(exc)) from None


def families_dir_option(func: Any) -> Any:
    """The ``--families-dir`` option (repeatable) shared by the logic commands."""
    return click.option(
        "--families-dir",
        "families_dirs",
        multiple=True,
        type=click.Path(exists=True, file_okay=False),
        help="A directory of family files to search (repeatable; VERITASK_FAMILY_PATH too).",
    )(func)


def unsafe_no_sandbox_option(func: Any) -> Any:
    """``--unsafe-no-sandbox``: run family files even where the kernel lacks the OS sandbox."""
    return click.option(
        "--unsafe-no-sandbox",
        "unsafe_no_sandbox",
        is_flag=True,
        help="Run family files even where the kernel lacks the OS sandbox (Landlock, seccomp);"
        " only resource limits and an audit hook, which the code can disable, then stand"
        " between it and this machine. No effect where the sandbox is available.",
    )(func)


@contextlib.contextmanager
def sandboxed(
    families: Iterable[Family], unsafe_no_sandbox: bool, *, always: bool = False
) -> Iterator[None]:
    """Run a command's work under the sandbox policy.

    Before any family file runs: a clean error when the OS sandbox is unavailable and
    ``--unsafe-no-sandbox`` was not given (``always`` when the command writes new family code
    itself), or a warning on stderr when it was. Refusals raised later become CLI errors too.
    """
    untrusted = always or any(isinstance(f, FileFamily) for f in families)
    with allow_unsafe_no_sandbox(unsafe_no_sandbox):
        try:
            support = require_sandbox(unsafe_no_sandbox) if untrusted else None
            if support is not None and not support.available:
                click.echo(
                    "warning: running family files WITHOUT the OS sandbox (--unsafe-no-sandbox): "
                    + "; ".join(support.problems),
                    err=True,
                )
            yield
        except SandboxUnavailable as exc:
            raise click.ClickException(str(exc)) from None


def blind_review_options(func: Any) -> Any:
    """``--n`` (blind solvers) and ``--tau`` (right answers needed), shared by gate and evolve."""
    func = click.option(
        "--tau", type=click.IntRange(min=1), default=3, show_default=True,
        help="Right answers needed.",
    )(func)  # fmt: skip
    return click.option(
        "--n", type=click.IntRange(min=1), default=5, show_default=True, help="Blind solvers."
    )(func)


def review_code_calls_option(func: Any) -> Any:
    """``--review-code-calls`` and ``--blind-code-calls``: run_python calls the quality
    reviewer and each blind solver may make (their code runs in the OS sandbox)."""
    func = click.option(
        "--blind-code-calls", type=click.IntRange(min=0, max=50), default=0, show_default=True,
        help="run_python calls each blind solver may make (sandboxed; the family is not"
        " importable there); 0 answers from the text alone.",
    )(func)  # fmt: skip
    return click.option(
        "--review-code-calls", type=click.IntRange(min=0, max=50), default=0, show_default=True,
        help="run_python calls the quality reviewer may make to test the family (its code runs"
        " in the OS sandbox with the family importable); 0 reads only.",
    )(func)  # fmt: skip


def per_level_option(func: Any) -> Any:
    """``--per-level``: instances per difficulty for the static gate."""
    return click.option(
        "--per-level", type=click.IntRange(min=1), default=100, show_default=True,
        help="Instances per difficulty for the static gate.",
    )(func)  # fmt: skip


def _check_tau(n: int, tau: int) -> None:
    if tau > n:
        raise click.BadParameter(f"--tau {tau} exceeds --n {n}", param_hint="--tau")


def _print_record(record: FamilyGateRecord) -> None:
    verdict = "PASSED" if record.passed else "FAILED"
    click.echo(f"family {record.family} v{record.version} ({record.mode} gates): {verdict}")
    gates = record.to_json()["gates"]
    for name, gate in gates.items():
        if gate is None:
            click.echo(f"  {name:<13} skipped ({record.skipped.get(name, 'not run')})")
        else:
            click.echo(f"  {name:<13} {'passed' if gate['passed'] else 'FAILED'}")
    for problem in record.problems[:20]:
        click.echo(f"  - {problem}")
    if record.costs:
        total = record.costs["total"]
        click.echo(f"  model calls {total['turns']}  cost {total['cost']}")


@click.command("gate")
@click.argument("family_id", metavar="FAMILY")
@click.option("--model", help="Model spec (e.g. openai:MODEL) for the LLM review and blind review.")
@blind_review_options
@click.option(
    "--attempts",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Fresh instances a blind-review probe may use.",
)
@per_level_option
@click.option(
    "--consensus-per-level",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Instances per difficulty for the validator consensus.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the gate instances.")
@review_code_calls_option
@families_dir_option
@cache_dir_option
@unsafe_no_sandbox_option
@click.option("--record", type=OUT_FILE, help="Also write the record here.")
@click.option("--json", "as_json", is_flag=True, help="Print the gate record as JSON.")
def gate_cmd(
    family_id: str,
    model: str | None,
    n: int,
    tau: int,
    attempts: int,
    per_level: int,
    consensus_per_level: int,
    seed: int,
    review_code_calls: int,
    blind_code_calls: int,
    families_dirs: tuple[str, ...],
    cache_dir: str | None,
    unsafe_no_sandbox: bool,
    record: str | None,
    as_json: bool,
) -> None:
    """Run the gates on FAMILY: static ones without --model, all of them with it.

    FAMILY `all` gates every family; its --json is ``{"passed", "families": [record, ...]}``
    and --record is then a directory (one FAMILY.json each). Exits with status 1 when a family
    fails.
    """
    _check_tau(n, tau)
    families = _gated_families(family_id, families_dirs)
    provider = provider_arg(model, cache_dir) if model else None
    settings = GateSettings(
        n=n,
        tau=tau,
        attempts=attempts,
        per_level=per_level,
        consensus_per_level=consensus_per_level,
        seed=seed,
        review_code_calls=review_code_calls,
        blind_code_calls=blind_code_calls,
    )
    results, tool = [], review_code_calls + blind_code_calls > 0
    for family in families:
        path = record
        if record is not None and family_id == "all":
            path = str(Path(record) / f"{family.id}.json")
        try:
            with sandboxed([family], unsafe_no_sandbox, always=tool and model is not None):
                result = run_gates(family, provider, settings, record_path=path)
        except ProviderError as exc:
            raise model_failure(model, exc) from None
        results.append(result)
        if not as_json:
            _print_record(result)
    passed = all(r.passed for r in results)
    if as_json and family_id == "all":
        echo_json({"passed": passed, "families": [r.to_json() for r in results]})
    elif as_json:
        echo_json(results[0].to_json())
    if not passed:
        raise SystemExit(1)


def _gated_families(family_id: str, dirs: tuple[str, ...]) -> list[Family]:
    if family_id != "all":
        return [family_by_id(family_id, dirs)]
    try:
        return list(all_families(dirs).values())
    except FamilyFileError as exc:
        raise click.ClickException(str(exc)) from None


def _print_evolution(result: EvolutionResult) -> None:
    for r in result.rounds:
        click.echo(f"round {r.round} ({r.stage}): {r.outcome} {r.family or ''}".rstrip())
        for problem in r.problems[:10]:
            click.echo(f"  - {problem}")
    if result.accepted:
        click.echo(f"accepted {result.family} -> {result.path}")
    else:
        click.echo(f"rejected after {len(result.rounds)} round(s)")
    total = result.costs.get("total", {})
    click.echo(f"model calls {total.get('turns', 0)}  cost {total.get('cost', 0.0)}")


@click.command("evolve")
@click.argument("seed_family", metavar="SEED_FAMILY")
@click.option("--model", required=True, help="Model spec (e.g. openai:MODEL) for every role.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="evolved",
    show_default=True,
    help="Directory the accepted family file and its records go to.",
)
@click.option(
    "--rounds",
    "t_max",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Rounds at most (t_max).",
)
@click.option(
    "--playbook",
    type=OUT_FILE,
    help="Playbook JSON [default: OUT/playbook.json].",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of sample/gate instances."
)
@click.option(
    "--validators",
    "extra_validators",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Independent validators written for the pool.",
)
@blind_review_options
@per_level_option
@click.option(
    "--curator",
    type=click.Choice(["rules", "model"]),
    default="rules",
    show_default=True,
    help="Who curates the playbook after each round: fixed rules, or the model (add, merge,"
    " rewrite, drop lessons, each citing the round's evidence).",
)
@review_code_calls_option
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False),
    help="Keep each committed round here; a rerun resumes after the last one"
    " [default: OUT/runs/SEED_FAMILY].",
)
@families_dir_option
@cache_dir_option
@unsafe_no_sandbox_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def evolve_cmd(
    seed_family: str,
    model: str,
    out: str,
    t_max: int,
    playbook: str | None,
    seed: int,
    extra_validators: int,
    n: int,
    tau: int,
    per_level: int,
    curator: str,
    review_code_calls: int,
    blind_code_calls: int,
    run_dir: str | None,
    families_dirs: tuple[str, ...],
    cache_dir: str | None,
    unsafe_no_sandbox: bool,
    as_json: bool,
) -> None:
    """Evolve SEED_FAMILY into a new family file in OUT (exit status 1 when none passes).

    Each committed round is kept in the run directory: a killed run rerun with the same
    settings resumes after its last committed round without asking the model again (more
    --rounds continue a rejected run); a rerun with other settings is refused."""
    _check_tau(n, tau)
    _check_playbook(playbook)
    family = family_by_id(seed_family, (*families_dirs, out))
    provider = provider_arg(model, cache_dir)
    settings = EvolveSettings(
        out_dir=out,
        t_max=t_max,
        playbook_path=playbook,
        seed=seed,
        extra_validators=extra_validators,
        gates=GateSettings(
            n=n,
            tau=tau,
            per_level=per_level,
            review_code_calls=review_code_calls,
            blind_code_calls=blind_code_calls,
        ),
        families_dirs=families_dirs,
        run_dir=run_dir,
        curator="model" if curator == "model" else "rules",
    )
    try:
        with sandboxed([family], unsafe_no_sandbox, always=True):
            result = evolve(family, provider, settings, model=model)
    except ProviderError as exc:
        raise model_failure(model, exc) from None
    except (FamilyFileError, RunConflict) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json(result.to_json())
    else:
        _print_evolution(result)
    if not result.accepted:
        raise SystemExit(1)


def register(group: click.Group) -> None:
    """Add ``gate`` and ``evolve`` to a click group."""
    group.add_command(gate_cmd)
    group.add_command(evolve_cmd)


def _check_playbook(path: str | None) -> None:
    """A --playbook file that exists must be a playbook an earlier run wrote (one line
    otherwise); a missing one is where this run writes its playbook."""
    if path is None or not Path(path).is_file():
        return
    with reading(path):
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not a playbook (not JSON: {exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            raise ValueError(f"{path} is not a playbook: expected a JSON object with 'entries'")
