"""Configuration: where kward keeps its files and config.json (`store`: `Paths`,
`resolve_paths`, `ConfigStore`), every setting resolved from the environment and
config.json (`settings`, by the rules of `rules`), and the credential values known to
the process, scrubbed from output (`secrets`).
"""

from kward.config.store import ConfigStore, Paths, resolve_paths

__all__ = ["ConfigStore", "Paths", "resolve_paths"]
