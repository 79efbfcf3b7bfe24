"""Thin RPC handlers, one module per namespace. Wire names are listed in
`kward.rpc.method_table.METHODS`; each handler takes a `Call`, validates its params, calls the
runtime (`call.runtime`) and returns a JSON-able result."""
