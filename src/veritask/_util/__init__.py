"""Floor 1: helpers every package may use: stable seeds, atomic file writes, canonical hashes,
JSON from untrusted text.

Nothing here imports another veritask package.
"""

from veritask._util._hash import canonical_json, sha256, sha256_text
from veritask._util._io import atomic_write, atomic_write_text, write_lines_atomic
from veritask._util._json import loads_untrusted, raw_decode_untrusted, repair_untrusted
from veritask._util._seeds import derive_seed

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "canonical_json",
    "derive_seed",
    "loads_untrusted",
    "raw_decode_untrusted",
    "repair_untrusted",
    "sha256",
    "sha256_text",
    "write_lines_atomic",
]
