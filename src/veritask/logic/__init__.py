"""Verifiable logic task families (SSLogic): generators, templates, validator pools."""

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
from veritask.logic._gates import GateReport, gate1_static
from veritask.logic._registry import builtin_families, get_family
from veritask.logic._sandbox import SandboxResult, run_sandboxed

__all__ = [
    "CATEGORIES",
    "Category",
    "ConsensusError",
    "Family",
    "GateReport",
    "Instance",
    "SandboxResult",
    "builtin_families",
    "canonical",
    "gate1_static",
    "get_family",
    "instance_seed",
    "make_instance",
    "normalize",
    "run_sandboxed",
    "score_answer",
    "solve",
]
