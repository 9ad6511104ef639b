"""Task synthesis: Set Designer, Explorer and Projector (symbolic by default)."""

from veritask._util import derive_seed
from veritask.synth._analysis import DomainModel
from veritask.synth._architect import (
    AcceptedStage,
    Architect,
    ArchitectError,
    ArchitectResult,
    play_in_memory,
    spec_to_yaml,
)
from veritask.synth._architect_artifacts import (
    ArchitectReport,
    ComplexityPlan,
    RulesArtifact,
    StageError,
    TablesArtifact,
)
from veritask.synth._architect_checks import PlanLimits
from veritask.synth._architect_run import (
    ArchitectStage,
    architect_config,
    default_run_dir,
    play_in,
    run_architect,
)
from veritask.synth._architect_seed import Seed, SeedError, SeedHints, load_seed, parse_seed
from veritask.synth._designer import DesignError, Scene, SymbolicSetDesigner
from veritask.synth._explorer import Episode, SymbolicExplorer
from veritask.synth._fused import fused_services
from veritask.synth._generable import generation_problems
from veritask.synth._generate import (
    GenerateSummary,
    generate,
    generate_async,
)
from veritask.synth._llm_explorer import Exploration, ExplorerLimits, LLMExplorer
from veritask.synth._llm_projector import LLMProjector, ProjectionRejected
from veritask.synth._persona import LLMPersonaWriter, Persona, persona_of, persona_problems
from veritask.synth._projector import SymbolicProjector, classify
from veritask.synth._unit import GENERATOR
from veritask.task import find_spoilers, replay, text_keys

__all__ = [
    "GENERATOR",
    "AcceptedStage",
    "Architect",
    "ArchitectError",
    "ArchitectReport",
    "ArchitectResult",
    "ArchitectStage",
    "ComplexityPlan",
    "DesignError",
    "DomainModel",
    "Episode",
    "Exploration",
    "ExplorerLimits",
    "GenerateSummary",
    "LLMExplorer",
    "LLMPersonaWriter",
    "LLMProjector",
    "Persona",
    "PlanLimits",
    "ProjectionRejected",
    "RulesArtifact",
    "Scene",
    "Seed",
    "SeedError",
    "SeedHints",
    "StageError",
    "SymbolicExplorer",
    "SymbolicProjector",
    "SymbolicSetDesigner",
    "TablesArtifact",
    "architect_config",
    "classify",
    "default_run_dir",
    "derive_seed",
    "find_spoilers",
    "fused_services",
    "generate",
    "generate_async",
    "generation_problems",
    "load_seed",
    "parse_seed",
    "persona_of",
    "persona_problems",
    "play_in",
    "play_in_memory",
    "replay",
    "run_architect",
    "spec_to_yaml",
    "text_keys",
]
