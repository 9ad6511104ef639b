"""Verifiable logic task families (SSLogic): generators, templates, validator pools."""

import importlib
from typing import TYPE_CHECKING, Any

from veritask.logic._complexity import (
    PATTERNS,
    ComplexityMetrics,
    family_roots,
    measure_family,
    measure_source,
)
from veritask.logic._family import (
    CATEGORIES,
    Category,
    ConsensusError,
    Family,
    Instance,
    canonical,
    instance_seed,
    make_instance,
    normalize,
    score_answer,
    solve,
)
from veritask.logic._filefamily import (
    FamilyCodeError,
    FamilyFileError,
    FamilySpec,
    FileFamily,
    family_from_source,
    load_family_file,
    parse_family_source,
    read_family_file,
)
from veritask.logic._gates import GateReport, gate1_static
from veritask.logic._produce import (
    DEFAULT_MIX_SPEC,
    Bucket,
    Mix,
    MixError,
    ProduceError,
    Production,
    answer_stats,
    pass_at_k_by_family,
    produce,
    question_split,
    read_records,
    report,
    write_jsonl,
)
from veritask.logic._registry import (
    FAMILY_PATH_ENV,
    all_families,
    builtin_families,
    family_dirs,
    file_families,
    get_family,
)
from veritask.logic._sandbox import (
    SandboxCall,
    SandboxLimits,
    SandboxResult,
    SandboxWorker,
    run_sandboxed,
)
from veritask.logic.rg import LogicDataset, LogicDatasetConfig, create_dataset

if TYPE_CHECKING:
    from veritask.logic._evolve import (
        EvolutionResult,
        GateSettings,
        Playbook,
        PlaybookEntry,
        RoundRecord,
        evolve,
        evolve_async,
    )
    from veritask.logic._review import (
        BlindReport,
        ConsensusReport,
        FamilyGateRecord,
        QualityVerdict,
        ReviewReport,
        blind_review,
        check_consensus,
        review_family,
        run_gates,
        run_gates_async,
    )

_LAZY = {
    **dict.fromkeys(
        (
            "EvolutionResult",
            "GateSettings",
            "Playbook",
            "PlaybookEntry",
            "RoundRecord",
            "evolve",
            "evolve_async",
        ),
        "veritask.logic._evolve",
    ),
    **dict.fromkeys(
        (
            "BlindReport",
            "ConsensusReport",
            "FamilyGateRecord",
            "QualityVerdict",
            "ReviewReport",
            "blind_review",
            "check_consensus",
            "review_family",
            "run_gates",
            "run_gates_async",
        ),
        "veritask.logic._review",
    ),
}


def __getattr__(name: str) -> Any:
    """Load the gate and evolution names (and with them the model layer) on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "CATEGORIES",
    "DEFAULT_MIX_SPEC",
    "FAMILY_PATH_ENV",
    "PATTERNS",
    "BlindReport",
    "Bucket",
    "Category",
    "ComplexityMetrics",
    "ConsensusError",
    "ConsensusReport",
    "EvolutionResult",
    "Family",
    "FamilyCodeError",
    "FamilyFileError",
    "FamilyGateRecord",
    "FamilySpec",
    "FileFamily",
    "GateReport",
    "GateSettings",
    "Instance",
    "LogicDataset",
    "LogicDatasetConfig",
    "Mix",
    "MixError",
    "Playbook",
    "PlaybookEntry",
    "ProduceError",
    "Production",
    "QualityVerdict",
    "ReviewReport",
    "RoundRecord",
    "SandboxCall",
    "SandboxLimits",
    "SandboxResult",
    "SandboxWorker",
    "all_families",
    "answer_stats",
    "blind_review",
    "builtin_families",
    "canonical",
    "check_consensus",
    "create_dataset",
    "evolve",
    "evolve_async",
    "family_dirs",
    "family_from_source",
    "family_roots",
    "file_families",
    "gate1_static",
    "get_family",
    "instance_seed",
    "load_family_file",
    "make_instance",
    "measure_family",
    "measure_source",
    "normalize",
    "parse_family_source",
    "pass_at_k_by_family",
    "produce",
    "question_split",
    "read_family_file",
    "read_records",
    "report",
    "review_family",
    "run_gates",
    "run_gates_async",
    "run_sandboxed",
    "score_answer",
    "solve",
    "write_jsonl",
]
