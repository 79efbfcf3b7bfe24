"""Thin RPC handlers, one module per namespace. Wire names are listed in
`kward.rpc.registry.METHODS`; each handler takes a `Call` and returns a JSON-able result."""
