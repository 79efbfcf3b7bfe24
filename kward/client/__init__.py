"""kward.client: a small synchronous client of the kward protocol, over three transports.

    with Client.spawn() as k:            # `kward rpc` as a subprocess (or any argv)
        ...
    with Client.connect("unix://") as k: # a listening server (`kward rpc --listen unix://`)
        ...
    with Client.in_process() as k:       # the same server core inside this process

See `kward.client.connection` and docs/client.md.
"""

from kward.client.connection import Client
from kward.client.subscription import ClientClosed, Message, RpcError, Subscription

__all__ = ["Client", "ClientClosed", "Message", "RpcError", "Subscription"]
