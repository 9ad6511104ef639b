"""Task synthesis: Set Designer, Explorer and Projector (symbolic by default)."""

from veritask.synth._analysis import DomainModel, derive_seed
from veritask.synth._designer import Scene, SymbolicSetDesigner
from veritask.synth._explorer import Episode, SymbolicExplorer
from veritask.synth._generate import GENERATOR, GenerateSummary, generate, replay
from veritask.synth._projector import SymbolicProjector, classify
from veritask.task import find_spoilers, text_keys

__all__ = [
    "GENERATOR",
    "DomainModel",
    "Episode",
    "GenerateSummary",
    "Scene",
    "SymbolicExplorer",
    "SymbolicProjector",
    "SymbolicSetDesigner",
    "classify",
    "derive_seed",
    "find_spoilers",
    "generate",
    "replay",
    "text_keys",
]
