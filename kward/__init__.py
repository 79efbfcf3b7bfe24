"""kward: a coding agent with a JSON-RPC backend (`kward rpc`) and a terminal CLI.

Importing this package does no work beyond defining the version.
"""

__version__ = "0.1.0"
