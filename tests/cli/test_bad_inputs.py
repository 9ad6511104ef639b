"""The bad-input matrix: every command, every bad input that applies, one clean error line.

Commands are enumerated from the click group itself, so a new command without an entry in
``COMMANDS`` fails :func:`test_every_command_has_an_entry`. Each entry names the slots a bad
input can go into (an input file or directory, an output path, a model spec, an agent name,
``--executor``); every kind of bad input without a slot is declared not applicable with the
reason. Rows run in-process with ``catch_exceptions=False``: the entry point's last-resort
handler is not on this path, so an unhandled exception fails its row.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import load_domain
from veritask.env import CompiledDomain

KINDS = (
    "missing_path",
    "missing_parent",
    "dir_for_file",
    "empty_file",
    "binary_file",
    "non_utf8",
    "deep_json",
    "huge_numbers",
    "truncated_json",
    "wrong_schema",
    "dead_endpoint",
    "unknown_agent",
    "missing_extra",
)
CONTENT_KINDS = KINDS[3:10]

#: File contents of the content kinds (the same bytes whatever the file's extension).
CONTENTS: dict[str, bytes] = {
    "empty_file": b"",
    "binary_file": bytes(range(256)) * 8,
    "non_utf8": '{"name": "caf\u00e9 \u00fcber"}\n'.encode("latin-1"),
    "deep_json": b"[" * 100_000 + b"]" * 100_000,
    "huge_numbers": b'{"n": 1e999999, "m": ' + b"9" * 5000 + b"}\n",
    "truncated_json": b'{"topics": ["a", "b"',
    "wrong_schema": b'{"unexpected": [1, 2, 3]}\n',
}

_NOT_SQLITE = "not a SQLite database"
_NOT_DATASET = "manifest"
#: Expected message fragment per input format and content kind.
FRAGMENTS: dict[str, dict[str, str]] = {
    "sqlite": dict.fromkeys(CONTENT_KINDS, _NOT_SQLITE),
    "dataset": dict.fromkeys(CONTENT_KINDS, _NOT_DATASET),
    "archive": dict.fromkeys(CONTENT_KINDS, "not a dataset archive"),
}

READ_ONLY = "output"
_FRAGMENT = {
    "missing_path": "does not exist",
    "dir_for_file": "is a directory",
    "dead_endpoint": "127.0.0.1",
    "unknown_agent": "no-such-agent",
    "missing_extra": "pip install 'veritask[ray]'",
}
_NO_SLOT = {
    "missing_path": "reads no file or directory a user names",
    "missing_parent": "writes no output file",
    "dir_for_file": "reads no file a user names",
    "dead_endpoint": "calls no model",
    "unknown_agent": "takes no agent name",
    "missing_extra": "has no --executor option",
}


@dataclass(frozen=True)
class Cmd:
    """The slots of one command. Templates are argv lists with ``{X}`` where the bad value
    goes; ``{DATASET}``, ``{DB}``, ``{TMP}``, ``{MODEL}`` and ``{SEEDS}`` name good values.

    Attributes:
        file_in: An argv whose ``{X}`` is an input file (or directory when ``fmt`` is
            ``dataset``).
        fmt: The input's format (``json``, ``yaml``, ``sqlite``, ``dataset`` ...).
        out: An argv whose ``{X}`` is an output file path.
        model: An argv whose model spec is ``{MODEL}`` (a dead local endpoint).
        agent: An argv whose ``{X}`` is an agent name.
        ray: An argv with ``--executor ray``.
        fragments: Expected fragments overriding the defaults, per kind.
        na: Kinds declared not applicable although a slot exists, with the reason.
        xfail: Kinds whose fix belongs to another area, with that area.
    """

    file_in: tuple[str, ...] | None = None
    fmt: str = "json"
    out: tuple[str, ...] | None = None
    model: tuple[str, ...] | None = None
    agent: tuple[str, ...] | None = None
    ray: tuple[str, ...] | None = None
    fragments: dict[str, str] = field(default_factory=dict)
    na: dict[str, str] = field(default_factory=dict)
    xfail: dict[str, str] = field(default_factory=dict)
    why_no_input: str = ""


def _a(*argv: str) -> tuple[str, ...]:
    return argv


_DS = "{DATASET}"
ARCHITECT_SEED = Path(__file__).parents[1] / "synth" / "data" / "travel_seed.yaml"
_SERVER_NA = "a good input would start a server that blocks the test"
_BINARY = "UTF-8|is binary"
_DEEP = "nested too deeply|nested more than"
_TEXT = {
    "binary_file": _BINARY,
    "non_utf8": "UTF-8",
    "deep_json": _DEEP,
    "huge_numbers": "digits",
}
_SPEC = {
    "missing_path": "no such spec file",
    "dir_for_file": "is a directory",
    "empty_file": "a spec is a YAML mapping",
    **dict.fromkeys(("binary_file", "non_utf8"), "not UTF-8 text|is binary"),
    "deep_json": _DEEP,
    "huge_numbers": "digits",
    "truncated_json": "while parsing|not valid YAML",
    "wrong_schema": "Extra inputs are not permitted",
}


def _parsed(fragment: str, *kinds: str) -> dict[str, str]:
    """The same fragment for several content kinds (default: those a parser rejects)."""
    return dict.fromkeys(
        kinds or ("deep_json", "huge_numbers", "truncated_json", "wrong_schema"), fragment
    )


_MODEL_FIRST = "writes its output only after the model answers (the dead endpoint row covers it)"

COMMANDS: dict[str, Cmd] = {
    "architect": Cmd(
        file_in=_a("architect", "{X}", "--model", "scripted", "--out", "{TMP}/s.yaml"),
        fmt="yaml",
        out=_a("architect", "{SPECSEED}", "--model", "{MODEL}", "--out", "{X}"),
        model=_a("architect", "{SPECSEED}", "--model", "{MODEL}", "--out", "{TMP}/s.yaml"),
        na={"missing_parent": _MODEL_FIRST},
        fragments=_parsed("invalid seed", "empty_file", "truncated_json", "wrong_schema"),
    ),
    "blueprint run": Cmd(
        file_in=_a("blueprint", "run", "{X}", "--model", "{MODEL}", "--out", "{TMP}/run"),
        fmt="yaml",
        model=_a("blueprint", "run", "{SEEDS}", "--model", "{MODEL}", "--out", "{TMP}/run"),
        fragments={
            "empty_file": "topics",
            "truncated_json": "not valid YAML",
            "wrong_schema": "topics",
        },
    ),
    "blueprint status": Cmd(
        file_in=_a("blueprint", "status", "{X}"),
        fmt="dataset",
        fragments=dict.fromkeys(CONTENT_KINDS, "holds no blueprint run"),
    ),
    "call": Cmd(
        file_in=_a("call", "mock", "query_members", "{}", "--state", "{X}"),
        fmt="sqlite",
        out=_a("call", "mock", "query_members", "{}", "--save", "{X}"),
    ),
    "check": Cmd(
        file_in=_a("check", "{X}"), fmt="dataset", fragments={"empty_file": "never sealed"}
    ),
    "compact": Cmd(file_in=_a("compact", "{X}"), fmt="dataset"),
    "curate": Cmd(
        file_in=_a("curate", "{X}", "--out", "{TMP}/kept.jsonl"),
        fmt="jsonl",
        out=_a("curate", "{TRAJ}", "--out", "{X}"),
        fragments={"empty_file": "is empty", **_parsed("not a trajectory")},
    ),
    "diff": Cmd(file_in=_a("diff", "{X}", "{DB}"), fmt="sqlite"),
    "domains": Cmd(why_no_input="lists built-in domains only"),
    "eval": Cmd(
        file_in=_a("eval", "{X}"),
        fmt="dataset",
        out=_a("eval", _DS, "--agent", "oracle", "--out", "{X}"),
        agent=_a("eval", _DS, "--agent", "{X}"),
        ray=_a("eval", _DS, "--agent", "oracle", "--executor", "ray"),
        model=_a("eval", _DS, "--agent", "{MODEL}", "--limit", "1"),
        fragments={"empty_file": "does not pass 'veritask check'"},
    ),
    "evolve report": Cmd(
        file_in=_a("evolve", "report", "{X}"),
        fmt="dataset",
        fragments=dict.fromkeys(CONTENT_KINDS, "has no finished evolve run"),
    ),
    "evolve run": Cmd(
        model=_a(
            "evolve",
            "run",
            "--domains",
            "mock",
            "--plans",
            "1",
            "--iterations",
            "1",
            "--synthesis",
            "model",
            "--model",
            "{MODEL}",
            "--out",
            "{TMP}/ev",
        ),
        agent=_a("evolve", "run", "--domains", "mock", "--agent", "{X}", "--out", "{TMP}/ev"),
        why_no_input="reads built-in domains; writes a run directory it creates",
    ),
    "evolve status": Cmd(
        file_in=_a("evolve", "status", "{X}"),
        fmt="dataset",
        fragments=dict.fromkeys(CONTENT_KINDS, "holds no evolve run"),
    ),
    "export": Cmd(
        file_in=_a("export", "{X}", "--format", "tau2", "--out", "{TMP}/t.json"),
        fmt="dataset",
        out=_a("export", _DS, "--format", "tau2", "--out", "{X}"),
    ),
    "export-sft": Cmd(
        file_in=_a("export-sft", "{X}", "--format", "openai", "--out", "{TMP}/sft.jsonl"),
        fmt="jsonl",
        out=_a("export-sft", "{TRAJ}", "--format", "openai", "--out", "{X}"),
        fragments={
            **_parsed("can't decode|is binary|UTF-8", "binary_file", "non_utf8"),
            **_parsed("json_invalid", "deep_json", "huge_numbers", "truncated_json"),
            "wrong_schema": "extra_forbidden",
            "empty_file": "is empty",
        },
    ),
    "fuse": Cmd(
        file_in=_a("fuse", "{X}", "mock", "--out", "{TMP}/f.yaml"),
        fmt="spec",
        out=_a("fuse", "mock", "retail", "--out", "{X}"),
        fragments=_SPEC,
    ),
    "generate": Cmd(
        file_in=_a("generate", "--domain", "{X}", "--n", "1", "--out", "{TMP}/g"),
        fmt="spec",
        fragments=_SPEC,
        model=_a(
            "generate",
            "--domain",
            "mock",
            "--n",
            "1",
            "--out",
            "{TMP}/g",
            "--explorer",
            "llm",
            "--model",
            "{MODEL}",
        ),
        ray=_a("generate", "--domain", "mock", "--n", "1", "--out", "{TMP}/g", "--executor", "ray"),
    ),
    "import-tau2": Cmd(
        file_in=_a("import-tau2", "{X}", "--domain", "retail", "--out", "{TMP}/t2"),
        fmt="tau2",
        fragments={
            "missing_path": "does not exist",
            "empty_file": "ends early|not JSON",
            "truncated_json": "ends early|not JSON",
            "wrong_schema": "is not τ²-bench's retail database",
            "huge_numbers": "out of range|digits",
        },
    ),
    "import-sql": Cmd(
        file_in=_a("import-sql", "{X}", "--name", "x"),
        fmt="sql",
        out=_a("import-sql", "{DDL}", "--name", "x", "--out", "{X}"),
        fragments={"empty_file": "is empty", **_parsed("invalid domain spec")},
    ),
    "import-hf": Cmd(
        file_in=_a("import-hf", "{X}", "--out", "{TMP}/back"),
        fmt="dataset",
        fragments=dict.fromkeys(CONTENT_KINDS, "cannot load its 'tasks' config"),
    ),
    "logic evolve": Cmd(
        file_in=_a(
            "logic", "evolve", "arithmetic_chain", "--model", "{MODEL}", "--playbook", "{X}"
        ),
        fmt="json",
        model=_a(
            "logic",
            "evolve",
            "arithmetic_chain",
            "--model",
            "{MODEL}",
            "--rounds",
            "1",
            "--out",
            "{TMP}/le",
            "--curator",
            "model",
            "--review-code-calls",
            "2",
        ),
        fragments=_parsed("playbook", "empty_file", "truncated_json", "wrong_schema"),
        na={"missing_path": "a missing --playbook is where the run writes its playbook"},
    ),
    "logic gate": Cmd(
        na={"missing_parent": _MODEL_FIRST},
        out=_a("logic", "gate", "arithmetic_chain", "--model", "{MODEL}", "--record", "{X}"),
        model=_a(
            "logic", "gate", "arithmetic_chain", "--model", "{MODEL}", "--review-code-calls", "1"
        ),
        why_no_input="reads built-in or --families-dir families (logic family files)",
    ),
    "logic generate": Cmd(
        out=_a(
            "logic", "generate", "arithmetic_chain", "--n", "2", "--difficulty", "1", "--out", "{X}"
        ),
        ray=_a(
            "logic",
            "generate",
            "arithmetic_chain",
            "--n",
            "2",
            "--difficulty",
            "1",
            "--out",
            "{TMP}/l.jsonl",
            "--executor",
            "ray",
        ),
        why_no_input="reads built-in or --families-dir families (logic family files)",
    ),
    "logic diagnostics": Cmd(
        file_in=_a("logic", "diagnostics", "{X}"),
        fmt="json",
        fragments={
            "empty_file": "ends early|is empty",
            "truncated_json": "not JSON",
            "wrong_schema": "not an evolve result",
            "dir_for_file": "no result.json",
            "huge_numbers": "out of range|digits",
        },
    ),
    "logic solvability": Cmd(
        model=_a(
            "logic",
            "solvability",
            "arithmetic_chain",
            "--model",
            "{MODEL}",
            "--levels",
            "1",
            "--per-level",
            "1",
        ),
        why_no_input="reads built-in or --families-dir families (logic family files)",
    ),
    "logic export": Cmd(
        file_in=_a("logic", "export", "{X}", "--format", "hf", "--out", "{TMP}/hf"),
        fmt="jsonl",
        fragments={
            "empty_file": "is empty",
            "truncated_json": "not JSON",
            "wrong_schema": "not an instance record",
            **_parsed("can't decode|is binary|UTF-8", "binary_file", "non_utf8"),
        },
    ),
    "logic list": Cmd(
        why_no_input="reads built-in or --families-dir families (logic family files)"
    ),
    "logic metrics": Cmd(
        why_no_input="reads built-in or --families-dir families (logic family files)"
    ),
    "logic report": Cmd(
        file_in=_a("logic", "report", "{X}"),
        fmt="jsonl",
        fragments={
            "empty_file": "is empty",
            "truncated_json": "not JSON",
            "wrong_schema": "not an instance record",
            **_parsed("can't decode|is binary|UTF-8", "binary_file", "non_utf8"),
        },
    ),
    "logic sandbox": Cmd(why_no_input="reports the sandbox of this machine"),
    "pack": Cmd(
        file_in=_a("pack", "{X}", "--out", "{TMP}/p.vtpack"),
        fmt="dataset",
        out=_a("pack", _DS, "--out", "{X}"),
    ),
    "policy": Cmd(file_in=_a("policy", "{X}"), fmt="spec", fragments=_SPEC),
    "report": Cmd(
        file_in=_a("report", _DS, "--prices", "{X}"),
        fmt="yaml",
        fragments={
            **_parsed("give PROMPT,COMPLETION or a YAML", "missing_path", "dir_for_file"),
            "empty_file": "expected a mapping",
            "truncated_json": "not valid YAML",
            "wrong_schema": "must be [prompt, completion]",
        },
    ),
    "rollout": Cmd(
        file_in=_a("rollout", "{X}", "--out", "{TMP}/r.jsonl"),
        fmt="dataset",
        out=_a("rollout", _DS, "--agent", "oracle", "--out", "{X}"),
        agent=_a("rollout", _DS, "--agent", "{X}", "--out", "{TMP}/r.jsonl"),
        ray=_a("rollout", _DS, "--agent", "oracle", "--executor", "ray", "--out", "{TMP}/r.jsonl"),
        model=_a("rollout", _DS, "--agent", "{MODEL}", "--limit", "1", "--out", "{TMP}/r.jsonl"),
        fragments={"empty_file": "does not pass 'veritask check'"},
    ),
    "schema": Cmd(file_in=_a("schema", "{X}"), fmt="spec", fragments=_SPEC),
    "seed": Cmd(out=_a("seed", "mock", "{X}"), why_no_input="reads a built-in domain name"),
    "serve": Cmd(
        file_in=_a("serve", "{X}"),
        fmt="spec",
        na={"missing_path": _SERVER_NA, "dir_for_file": _SERVER_NA},
    ),
    "serve-openenv": Cmd(
        file_in=_a("serve-openenv", "{X}"),
        fmt="dataset",
        fragments={"empty_file": "manifest is empty"},
    ),
    "serve-mcp": Cmd(
        file_in=_a("serve-mcp", "mock", "--state", "{X}"),
        fmt="sqlite",
    ),
    "simulate check": Cmd(
        file_in=_a("simulate", "check", "{X}", "--tools", "mock"),
        fmt="jsonl",
        out=_a("simulate", "check", "{TRAJ}", "--out", "{X}"),
        na=dict.fromkeys(
            ("deep_json", "huge_numbers", "truncated_json", "wrong_schema"),
            "a checker: rows that do not parse are its findings (reported as rejected rows)",
        ),
        fragments={"empty_file": "is empty"},
    ),
    "simulate fidelity": Cmd(
        file_in=_a("simulate", "fidelity", "{X}", "--model", "{MODEL}"),
        fmt="dataset",
        out=_a("simulate", "fidelity", _DS, "--model", "{MODEL}", "--out", "{X}"),
        na={"missing_parent": _MODEL_FIRST},
        model=_a(
            "simulate",
            "fidelity",
            _DS,
            "--model",
            "{MODEL}",
            "--limit",
            "1",
            "--out",
            "{TMP}/f.json",
        ),
    ),
    "simulate synthesize": Cmd(
        file_in=_a(
            "simulate",
            "synthesize",
            "{X}",
            "--tools",
            "mock",
            "--model",
            "{MODEL}",
            "--n",
            "1",
            "--out",
            "{TMP}/s",
        ),
        fmt="jsonl",
        model=_a(
            "simulate",
            "synthesize",
            "{TRAJ}",
            "--tools",
            "mock",
            "--model",
            "{MODEL}",
            "--n",
            "1",
            "--out",
            "{TMP}/s",
        ),
        fragments={
            **_parsed("can't decode|is binary|UTF-8", "binary_file", "non_utf8"),
            **_parsed("needs at least one seed trajectory", "empty_file", *_parsed("")),
        },
    ),
    "simulate tools": Cmd(
        file_in=_a("simulate", "tools", "{X}"),
        fmt="jsonl",
        fragments={
            **_parsed("no such spec file", "missing_path"),
            "dir_for_file": "is a directory",
            **_parsed("describes no tools", "empty_file", *_parsed("")),
            **_parsed("can't decode|is binary|UTF-8", "binary_file", "non_utf8"),
        },
    ),
    "tool-graph": Cmd(
        file_in=_a("tool-graph", "{X}"),
        fmt="spec",
        out=_a("tool-graph", "mock", "--out", "{X}"),
        fragments=_SPEC,
    ),
    "tools": Cmd(file_in=_a("tools", "{X}"), fmt="spec", fragments=_SPEC),
    "unpack": Cmd(file_in=_a("unpack", "{X}", "{TMP}/u"), fmt="archive"),
    "validate": Cmd(file_in=_a("validate", "{X}"), fmt="spec", fragments=_SPEC),
    "view": Cmd(
        file_in=_a("view", "{X}", "--out", "{TMP}/site"),
        fmt="dataset",
    ),
}


@dataclass(frozen=True)
class Row:
    """One invocation of the matrix: a command, a kind of bad input, argv and fragment."""

    command: str
    kind: str
    argv: tuple[str, ...] | None
    fragment: str = ""
    reason: str = ""
    xfail: str = ""

    @property
    def id(self) -> str:
        return f"{self.command.replace(' ', '-')}:{self.kind}"


def _slot(cmd: Cmd, kind: str) -> tuple[str, ...] | None:
    if kind in ("missing_path", "dir_for_file", *CONTENT_KINDS):
        if kind == "dir_for_file" and cmd.fmt in ("dataset", "tau2"):
            return None
        return cmd.file_in
    return {
        "missing_parent": cmd.out,
        "dead_endpoint": cmd.model,
        "unknown_agent": cmd.agent,
        "missing_extra": cmd.ray,
    }[kind]


def _no_slot_reason(cmd: Cmd, kind: str) -> str:
    if kind == "dir_for_file" and cmd.fmt in ("dataset", "tau2"):
        return "its input is a directory"
    if kind in CONTENT_KINDS:
        return cmd.why_no_input or "reads no file a user names"
    return cmd.why_no_input if kind == "missing_path" and cmd.why_no_input else _NO_SLOT[kind]


def _row(name: str, cmd: Cmd, kind: str) -> Row:
    argv = _slot(cmd, kind)
    if kind in cmd.na:
        return Row(name, kind, None, reason=cmd.na[kind])
    if argv is None:
        return Row(name, kind, None, reason=_no_slot_reason(cmd, kind))
    default = FRAGMENTS.get(cmd.fmt, _SPEC if cmd.fmt == "spec" else _TEXT).get(kind)
    default = default or _FRAGMENT.get(kind, "")
    return Row(name, kind, argv, cmd.fragments.get(kind, default), xfail=cmd.xfail.get(kind, ""))


def rows() -> list[Row]:
    """Every (command, kind) pair of the matrix, applicable or declared not to be."""
    return [_row(name, cmd, kind) for name, cmd in COMMANDS.items() for kind in KINDS]


def _walk(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        full = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from _walk(command, full + " ")
        else:
            yield full, command


def test_every_command_has_an_entry() -> None:
    found = dict(_walk(cli))
    assert sorted(found) == sorted(COMMANDS)
    for name, command in found.items():
        options = {p.name for p in command.params}
        cmd = COMMANDS[name]
        assert ("executor" in options) == (cmd.ray is not None), name
        assert ("agent" in options) == (cmd.agent is not None), name


def _params() -> list[object]:
    out: list[object] = []
    for row in rows():
        if row.argv is None:
            continue
        marks = [pytest.mark.xfail(strict=False, reason=row.xfail)] if row.xfail else []
        out.append(pytest.param(row, id=row.id, marks=marks))
    return out


@dataclass(frozen=True)
class Goods:
    """Good values shared by every row, and the bad files keyed by kind."""

    values: dict[str, str]
    bad_dir: Path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def goods(
    generated: Callable[[str, int, int], Path], tmp_path_factory: pytest.TempPathFactory
) -> Goods:
    root = tmp_path_factory.mktemp("bad-inputs")
    db = root / "seed.sqlite"
    db.write_bytes(CompiledDomain.from_spec(load_domain("mock")).seed)
    ddl = root / "schema.sql"
    ddl.write_text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n")
    seeds = root / "seeds.yaml"
    seeds.write_text("topics: [library]\n")
    traj = root / "traj.jsonl"
    dataset = generated("mock", 2, 0)
    ran = CliRunner().invoke(
        cli, ["rollout", str(dataset), "--agent", "oracle", "--out", str(traj)]
    )
    assert ran.exit_code == 0, ran.output
    (root / "a-dir").mkdir()
    values = {
        "DATASET": str(dataset),
        "DB": str(db),
        "DDL": str(ddl),
        "SEEDS": str(seeds),
        "SPECSEED": str(ARCHITECT_SEED),
        "TRAJ": str(traj),
        "MODEL": "openai:matrix-model",
        "PORT": str(_closed_port()),
    }
    return Goods(values, root)


def _bad_value(row: Row, goods: Goods, tmp: Path) -> str:
    cmd = COMMANDS[row.command]
    if row.kind == "missing_path":
        return str(goods.bad_dir / "missing" / "input.json")
    if row.kind == "missing_parent":
        return str(tmp / "no-such-dir" / "out.json")
    if row.kind == "dir_for_file":
        return str(goods.bad_dir / "a-dir")
    if row.kind == "unknown_agent":
        return "no-such-agent"
    if row.kind in CONTENT_KINDS:
        if cmd.fmt == "dataset":
            folder = tmp / "dataset"
            folder.mkdir()
            (folder / "manifest.jsonl").write_bytes(CONTENTS[row.kind])
            return str(folder)
        if cmd.fmt == "tau2":  # a checkout whose retail database holds the bad bytes
            data = tmp / "checkout" / "data" / "tau2" / "domains" / "retail"
            data.mkdir(parents=True)
            (data / "db.json").write_bytes(CONTENTS[row.kind])
            (data / "policy.md").write_text("# Retail agent policy\n")
            return str(tmp / "checkout")
        path = tmp / f"{row.kind}.{cmd.fmt}"
        path.write_bytes(CONTENTS[row.kind])
        return str(path)
    return ""


@pytest.mark.parametrize("row", _params())
def test_a_bad_input_ends_in_one_clean_error(
    row: Row, goods: Goods, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert row.argv is not None
    monkeypatch.setenv("VERITASK_BASE_URL", f"http://127.0.0.1:{goods.values['PORT']}/v1")
    monkeypatch.setenv("VERITASK_API_KEY", "matrix-key")
    monkeypatch.setattr("veritask.model._openai.backoff_delay", lambda *_: 0.0)
    monkeypatch.setitem(sys.modules, "ray", None)  # the ray extra is missing
    monkeypatch.chdir(tmp_path)
    values = {**goods.values, "TMP": str(tmp_path), "X": _bad_value(row, goods, tmp_path)}
    argv = [part.format(**values) if "{" in part and part != "{}" else part for part in row.argv]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    if row.kind == "missing_parent":  # every output file's parent directories are created
        assert result.exit_code == 0, result.output
        assert Path(values["X"]).parent.is_dir()
        return
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    # a fragment may name alternatives, "a|b": the shared reader and a command's own check
    # word the same problem differently
    assert any(f in result.output for f in row.fragment.split("|")), result.output
    assert "matrix-key" not in result.output


def test_every_not_applicable_pair_says_why() -> None:
    table = rows()
    assert len(table) == len(COMMANDS) * len(KINDS)
    for row in table:
        assert (row.argv is None) == bool(row.reason), row.id
        if row.argv is not None and row.kind != "missing_parent":
            assert row.fragment, f"{row.id}: no expected message fragment"
