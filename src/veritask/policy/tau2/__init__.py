"""Import τ²-bench domains (a user's checkout) as veritask domains with procedural tools."""

from veritask.policy.tau2._airline import export_airline, flatten_airline
from veritask.policy.tau2._import import DOMAINS, Tau2Import, import_tau2, tool_docs
from veritask.policy.tau2._retail import export_retail, flatten_retail

__all__ = [
    "DOMAINS",
    "Tau2Import",
    "export_airline",
    "export_retail",
    "flatten_airline",
    "flatten_retail",
    "import_tau2",
    "tool_docs",
]
