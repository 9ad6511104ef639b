"""Floor 1: helpers every package may use: stable seeds, atomic file writes, canonical hashes,
JSON from untrusted text, bounded readers of files we did not write.

Nothing here imports another veritask package.
"""

from veritask._util._bounded import (
    DEFAULT_LIMITS,
    FAST_LOADER,
    InputError,
    Limits,
    compose_yaml,
    decode_text,
    decompress,
    iter_jsonl,
    parse_json,
    parse_yaml,
    read_bytes,
    read_json,
    read_jsonl,
    read_text,
    read_yaml,
)
from veritask._util._hash import canonical_json, sha256, sha256_text
from veritask._util._io import atomic_write, atomic_write_text, write_lines_atomic
from veritask._util._json import loads_untrusted, raw_decode_untrusted, repair_untrusted
from veritask._util._seeds import derive_seed

__all__ = [
    "DEFAULT_LIMITS",
    "FAST_LOADER",
    "InputError",
    "Limits",
    "atomic_write",
    "atomic_write_text",
    "canonical_json",
    "compose_yaml",
    "decode_text",
    "decompress",
    "derive_seed",
    "iter_jsonl",
    "loads_untrusted",
    "parse_json",
    "parse_yaml",
    "raw_decode_untrusted",
    "read_bytes",
    "read_json",
    "read_jsonl",
    "read_text",
    "read_yaml",
    "repair_untrusted",
    "sha256",
    "sha256_text",
    "write_lines_atomic",
]
