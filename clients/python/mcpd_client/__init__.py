"""mcpd_client: the Python client of mcpd, the daemon that supervises local
MCP servers. Client is synchronous, AsyncClient is for asyncio; both find
the socket as mcpdctl does and name the app to mcpd."""

from mcpd_client._common import McpdError, ServerList, SubscriptionEvent, default_socket_path, state_name, VERSION
from mcpd_client.aio import AsyncClient, AsyncHost, AsyncSubscription
from mcpd_client.client import CancelToken, Client, Host, Subscription

__version__ = VERSION
__all__ = ["Client", "AsyncClient", "CancelToken", "McpdError", "ServerList", "SubscriptionEvent",
           "Subscription", "AsyncSubscription", "Host", "AsyncHost", "default_socket_path", "state_name"]
