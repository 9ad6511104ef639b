"""ASGI entry point named by openenv.yaml: veritask tasks as an OpenEnv environment.

``VERITASK_DATASET`` is the dataset directory (``veritask generate ... --out DIR``) and
``VERITASK_ALLOWED_HOSTS`` a comma-separated list of extra ``NAME[:PORT]`` names clients use
to reach the server (the loopback names are always allowed, on any port; ``*`` turns the Host
and Origin checks off, for a server behind a proxy that checks them).

``uvicorn server.app:app --port 8001``, ``python -m server.app --port 8001`` and the
``server`` script of this directory's pyproject.toml all serve it.
"""

from __future__ import annotations

import argparse
import os

from veritask.serve.openenv_app import make_openenv_app, serve_openenv

DATASET = os.environ.get("VERITASK_DATASET", "data/travel")
HOSTS = [h for h in os.environ.get("VERITASK_ALLOWED_HOSTS", "").split(",") if h]

app = make_openenv_app(DATASET, allowed_host=HOSTS)


def main() -> None:
    """Serve on loopback (``--host``, ``--port``; ``--allow-remote`` for another address)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--allow-remote", action="store_true")
    args = parser.parse_args()
    serve_openenv(
        DATASET,
        host=args.host,
        port=args.port,
        allow_remote=args.allow_remote,
        allowed_host=HOSTS,
    )


if __name__ == "__main__":
    main()
