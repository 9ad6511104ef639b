"""veritask tasks as an OpenEnv environment (see openenv.yaml and server/app.py)."""
