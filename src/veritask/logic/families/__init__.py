"""Built-in logic task families; each module exports ``FAMILIES: tuple[Family, ...]``."""
