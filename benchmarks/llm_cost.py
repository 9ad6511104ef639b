"""Token cost per certified package of the LLM mode, measured on a replayed run.

Run: ``.venv/bin/python benchmarks/llm_cost.py [--n 20] [--seed 1]``

The Client, Consultant and projector are the scripted agents of ``tests/synth/test_llm_mode.py``
(one scripted provider answering every role; four characters per token, 2 and 3 per million
tokens). The run is recorded, then generated again from the recording with the ``replay``
provider, and the cost section of ``veritask report`` is read from the replayed dataset. The
script checks that the replayed dataset is byte-identical to the recorded one and that every
package is certified. With a real model, point ``--model`` of ``veritask generate`` at it instead;
completions are then far longer than these scripted ones.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from veritask.model import RecordingProvider, ReplayProvider
from veritask.synth import generate
from veritask.task import check_dataset, report_dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "synth"))
from test_llm_mode import scripted  # the scripted agents live with their tests


def tree_digest(root: Path) -> str:
    """sha256 over every file's relative path and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        recording = root / "calls.jsonl"
        generate("travel", args.n, args.seed, root / "recorded", explorer="llm",
                 model=RecordingProvider(scripted(), recording))  # fmt: skip
        generate("travel", args.n, args.seed, root / "replayed", explorer="llm",
                 model=ReplayProvider(recording))  # fmt: skip
        same = tree_digest(root / "recorded") == tree_digest(root / "replayed")
        check = check_dataset(root / "replayed").to_json()
        costs: dict[str, Any] = report_dataset(root / "replayed")["costs"]
    out = {
        "n": args.n,
        "replay_byte_identical": same,
        "certified": check["certified"],
        "per_package": costs["per_package"],
        "modules": {
            name: {"success_rate": m["success_rate"], **m["per_package"]}
            for name, m in costs["modules"].items()
        },
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
