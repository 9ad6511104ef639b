"""ASGI entry point named by openenv.yaml: veritask tasks as an OpenEnv environment.

``VERITASK_DATASET`` is the dataset directory (``veritask generate ... --out DIR``) and
``VERITASK_ALLOWED_HOSTS`` a comma-separated list of extra ``NAME[:PORT]`` names clients use
to reach the server (the loopback names are always allowed; ``*`` turns the Host and Origin
checks off, for a server behind a proxy that checks them).
"""

from __future__ import annotations

import os

from veritask.serve.openenv_app import make_openenv_app

PORT = int(os.environ.get("PORT", "8000"))
HOSTS = [h for h in os.environ.get("VERITASK_ALLOWED_HOSTS", "").split(",") if h]

app = make_openenv_app(
    os.environ.get("VERITASK_DATASET", "data/travel"), port=PORT, allowed_host=HOSTS
)
