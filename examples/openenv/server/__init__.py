"""The veritask OpenEnv server package (see ../openenv.yaml)."""
