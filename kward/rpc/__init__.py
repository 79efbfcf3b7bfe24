"""The JSON-RPC face of kward: framing, transport, dispatcher, method table, handlers.

Nothing below this package imports it; `kward rpc` (kward.rpc.main) is its entry point.
"""
