"""Who an anonymous /submit request comes from: the client its quota is counted for (issue 35 point 9).

A client is the network address the request came from, as far as this server can trust it:

- without a trusted proxy (``trusted_proxies`` 0, the default off a Space): the address gradio reports
  (``request.client.host``). uvicorn sets it from the connection, and from ``X-Forwarded-For`` only when the
  connection comes from an address it trusts (``FORWARDED_ALLOW_IPS``, by default the loopback: a reverse proxy on
  the same host), taking the rightmost address that proxy did not add itself;
- behind ``trusted_proxies`` N proxies that each append the address they received the request from to
  ``X-Forwarded-For`` (a Hugging Face Space: N = 1, its proxy; the connection itself comes from the proxy, so
  gradio's address is the proxy's, the same for everyone): the N-th address from the right. Everything to the left
  of it was written by the client and may be forged, so it is never read. A request with fewer entries than N did
  not pass through the proxies: it counts as the connection's own address.

A wrong N errs on the safe side only if it is not above the real number of proxies: too small, and clients share
the proxy's quota; too large, and a client could choose its own address by sending the header.

An IPv6 address counts as its /48 (``IPV6_CLIENT_PREFIX``, the one owner of that length); an IPv4-mapped one as
the IPv4 address. Why /48 and not /64 or /56 (issue 49 point 4): whoever holds a prefix chooses every address in it,
and a /48 is what anyone can hold: a free tunnel broker hands one out in minutes, and RFC 6177 lets an ISP give a
customer a /48 as well as a /56. Counted by /64, one /56 was 256 clients with 5 attempts each, enough to spend the
anonymous total of 100 alone; by /56, a broker's /48 is still 256 clients. By /48 a customer counts once whatever
the ISP assigned. The cost: clients behind one /48 (a campus, a company) share one anonymous quota; each of them
gets a quota of its own by logging in. What is not an address counts as ``UNKNOWN`` (one client). Stored quotas
hold a keyed digest of the client, never the address (``Submissions``).
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any

from rexrank.errors import ConfigError

TRUSTED_PROXIES_ENV = "REXRANK_TRUSTED_PROXIES"
UNKNOWN = "unknown"
IPV6_CLIENT_PREFIX = 48  # an IPv6 client is its /48: the most any one customer or tunnel user holds (see above)


def trusted_proxies(value: str | int | None = None) -> int:
    """How many proxies in front of this server append to ``X-Forwarded-For``: ``value``, else the environment's
    ``REXRANK_TRUSTED_PROXIES``, else 1 in a Hugging Face Space (its proxy) and 0 elsewhere. ``ConfigError`` for
    anything but a whole number from 0 to 10."""
    if value is None:
        value = os.environ.get(TRUSTED_PROXIES_ENV)
    if value is None or value == "":
        from gradio.utils import get_space

        return 1 if get_space() is not None else 0
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = -1
    if not 0 <= count <= 10 or isinstance(value, bool):
        raise ConfigError(f"{TRUSTED_PROXIES_ENV} must be a whole number from 0 to 10 (how many proxies in front of "
                          f"the server append to X-Forwarded-For), got {str(value)[:40]!r}")
    return count


def client_address(peer: str | None, forwarded_for: list[str], proxies: int) -> str:
    """The address a request counts as coming from: ``peer`` (gradio's ``request.client.host``) when no proxy is
    trusted or the header has fewer than ``proxies`` entries, else the ``proxies``-th entry of ``forwarded_for`` (the
    header's values in order) from the right."""
    entries = [part.strip() for value in forwarded_for for part in str(value).split(",") if part.strip()]
    if proxies > 0 and len(entries) >= proxies:
        return entries[-proxies]
    return peer or UNKNOWN


def client_key(address: str) -> str:
    """The quota bucket of ``address``: the IPv4 address, or the IPv6 address's ``IPV6_CLIENT_PREFIX`` network
    (``UNKNOWN`` if neither)."""
    text = address.strip()
    if text.startswith("[") and "]" in text:  # "[v6]:port"
        text = text[1:text.index("]")]
    elif text.count(":") == 1:  # "v4:port"
        text = text.split(":")[0]
    try:
        ip = ipaddress.ip_address(text.split("%")[0])  # without an IPv6 zone
    except ValueError:
        return UNKNOWN
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{ip}/{IPV6_CLIENT_PREFIX}", strict=False))
    return str(ip)


def request_client(request: Any, proxies: int) -> str:
    """The client key of a gradio request (``gr.Request``; None, as a direct call passes: ``UNKNOWN``)."""
    if request is None:
        return UNKNOWN
    try:
        headers = request.headers
        values = headers.getlist("x-forwarded-for") if hasattr(headers, "getlist") else [
            v for k, v in dict(headers).items() if str(k).lower() == "x-forwarded-for"]
        client = getattr(request, "client", None)
        peer = getattr(client, "host", None) if client is not None else None
    except AttributeError:
        return UNKNOWN
    return client_key(client_address(peer, values, proxies))
