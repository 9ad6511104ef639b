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
from veritask.logic._registry import builtin_families, get_family

__all__ = [
    "CATEGORIES",
    "Category",
    "ConsensusError",
    "Family",
    "Instance",
    "builtin_families",
    "canonical",
    "get_family",
    "instance_seed",
    "make_instance",
    "normalize",
    "score_answer",
    "solve",
]
