"""Floor 8: SimAgent on veritask: tool catalogues, a strict trajectory checker with repair,
simulated environments, and their fidelity measured against the real ones.

- Catalogues: :class:`ToolCatalog` from a spec, an OpenAI tools JSON, an MCP server or seed
  trajectories (:func:`load_catalog`).
- Checking: :func:`check_turns` on one trajectory, :func:`check_file` on a file in any supported
  format (veritask, OpenAI / Hugging Face chat, ShareGPT, the paper's text format).
- Simulated environments: :class:`SimSession` (the session protocol, answered by a model, with a
  model judge), :func:`simulated_sessions` for the rollout job.
- Fidelity: :func:`measure_fidelity` replays certified witnesses and the faithful agent's
  trajectories through the simulator and the SQLite environment side by side and reports
  agreement per tool, per replay and overall, and the judge's precision and recall.
- Hybrid mode: :class:`HybridSession` runs spec'd tools on the real environment and the others
  on the simulator, over one catalogue (:func:`hybrid_catalog`) that marks which;
  :func:`open_simulated` opens either kind for a server.
- Synthesis: :func:`synthesize` writes new tasks and trajectories from seed trajectories
  (checked, repaired, filtered, costed); :func:`schema_variants` makes schema-perturbed copies.
"""

from veritask.rollout import rename_map
from veritask.simulate._catalog import (
    ToolCatalog,
    ToolDef,
    ToolParam,
    catalog_from_calls,
    catalog_from_json,
    catalog_from_mcp,
    catalog_from_spec,
    hybrid_catalog,
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
    REPLAYS,
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
from veritask.simulate._hybrid import HybridSession, hybrid_sessions, open_simulated
from veritask.simulate._perturb import (
    NOISE_KEY,
    SchemaVariant,
    perturb_trajectory,
    schema_variants,
)
from veritask.simulate._simenv import (
    JUDGE_MARK,
    SIMULATOR_MARK,
    Judgement,
    SimSession,
    action_text,
    observation,
    observation_payload,
    simulated_sessions,
    task_goals,
    testbed_rows,
)
from veritask.simulate._sources import catalog_from_trajectories, load_catalog
from veritask.simulate._synthesize import (
    CONSISTENCY_MARK,
    FILTERS,
    SYNTH_MARK,
    Seed,
    SynthesisRun,
    SynthesisStage,
    SynthOptions,
    load_seeds,
    parse_answer,
    run_synthesis,
    seed_from_turns,
    synthesis_prompt,
    synthesis_report,
    synthesize,
)

__all__ = [
    "ASPECTS",
    "CONSISTENCY_MARK",
    "ERROR_CLASSES",
    "FILTERS",
    "JUDGE_MARK",
    "NOISE_KEY",
    "REPLAYS",
    "SIMULATOR_MARK",
    "SYNTH_MARK",
    "Call",
    "CheckOptions",
    "CheckResult",
    "CheckSummary",
    "FidelityStage",
    "FormatError",
    "HybridSession",
    "Issue",
    "Judgement",
    "Row",
    "SchemaVariant",
    "Seed",
    "SimSession",
    "SynthOptions",
    "SynthesisRun",
    "SynthesisStage",
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
    "hybrid_catalog",
    "hybrid_sessions",
    "iter_records",
    "load_catalog",
    "load_seeds",
    "measure_fidelity",
    "observation",
    "observation_payload",
    "open_simulated",
    "parse_answer",
    "parse_text",
    "perturb_trajectory",
    "read_row",
    "rename_map",
    "render_text",
    "run_fidelity",
    "run_synthesis",
    "schema_variants",
    "seed_from_turns",
    "sidecar",
    "simulated_sessions",
    "synthesis_prompt",
    "synthesis_report",
    "synthesize",
    "task_goals",
    "testbed_rows",
    "tool_from_json",
    "write_row",
]
