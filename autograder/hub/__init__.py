"""The class's JupyterHub (`course hub`, `make class`): `setup` makes the accounts, the
exchange, the course folder and the configs from `hub.toml`; `server` runs the hub."""
