"""Floor 8: SimAgent on veritask: tool catalogues, a strict trajectory checker with repair,
simulated environments, and their fidelity measured against the real ones.

- Catalogues: :class:`ToolCatalog` from a spec, an OpenAI tools JSON, an MCP server or seed
  trajectories (:func:`load_catalog`).
- Checking: :func:`check_turns` on one trajectory, :func:`check_file` on a file in any supported
  format (veritask, OpenAI / Hugging Face chat, ShareGPT, the paper's text format).
- Simulated environments: :class:`SimSession` (the session protocol, answered by a model, with a
  model judge), :func:`simulated_sessions` for the rollout job.
- Fidelity: :func:`measure_fidelity` replays certified witnesses through the simulator and the
  SQLite environment side by side and reports agreement per tool and overall, and the judge's.
"""

from veritask.simulate._catalog import (
    ToolCatalog,
    ToolDef,
    ToolParam,
    catalog_from_calls,
    catalog_from_json,
    catalog_from_mcp,
    catalog_from_spec,
    tool_from_json,
)
from veritask.simulate._check import (
    ERROR_CLASSES,
    CheckOptions,
    CheckResult,
    Issue,
    check_turns,
    closest,
)
from veritask.simulate._checkfile import CheckSummary, check_file, check_record, sidecar
from veritask.simulate._fidelity import (
    ASPECTS,
    FidelityStage,
    compare,
    fidelity_report,
    measure_fidelity,
    run_fidelity,
)
from veritask.simulate._formats import (
    Call,
    FormatError,
    Row,
    Turn,
    detect,
    iter_records,
    parse_text,
    read_row,
    render_text,
    write_row,
)
from veritask.simulate._simenv import (
    JUDGE_MARK,
    SIMULATOR_MARK,
    Judgement,
    SimSession,
    action_text,
    observation,
    simulated_sessions,
    task_goals,
    testbed_rows,
)
from veritask.simulate._sources import catalog_from_trajectories, load_catalog

__all__ = [
    "ASPECTS",
    "ERROR_CLASSES",
    "JUDGE_MARK",
    "SIMULATOR_MARK",
    "Call",
    "CheckOptions",
    "CheckResult",
    "CheckSummary",
    "FidelityStage",
    "FormatError",
    "Issue",
    "Judgement",
    "Row",
    "SimSession",
    "ToolCatalog",
    "ToolDef",
    "ToolParam",
    "Turn",
    "action_text",
    "catalog_from_calls",
    "catalog_from_json",
    "catalog_from_mcp",
    "catalog_from_spec",
    "catalog_from_trajectories",
    "check_file",
    "check_record",
    "check_turns",
    "closest",
    "compare",
    "detect",
    "fidelity_report",
    "iter_records",
    "load_catalog",
    "measure_fidelity",
    "observation",
    "parse_text",
    "read_row",
    "render_text",
    "run_fidelity",
    "sidecar",
    "simulated_sessions",
    "task_goals",
    "testbed_rows",
    "tool_from_json",
    "write_row",
]
