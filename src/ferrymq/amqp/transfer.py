"""One whole transfer on a sending link, through proton's C calls.

``Link.delivery`` makes a Python ``Delivery`` wrapper, which builds two disposition objects
each time: on a busy link that costs more than encoding the message. The broker's consumer
links and the client's producer links send every message this way; the rare transfers that
carry a state of their own (transactional) still go through proton's wrappers.
"""

from __future__ import annotations

import cproton  # type: ignore[import-untyped]  # proton's own cffi binding
import proton

__all__ = ["send_transfer"]


def send_transfer(link: proton.Link, tag: str, payload: bytes, *, settle: bool = False) -> None:
    """A delivery tagged ``tag`` holding all of ``payload``, advanced (and settled first when
    ``settle``: at-most-once)."""
    impl = link._impl
    delivery = cproton.pn_delivery(impl, tag)
    sent = cproton.pn_link_send(impl, payload)
    if sent < 0:
        link._check(sent)  # raises proton's exception for the error code
    cproton.pn_link_advance(impl)
    if settle:
        cproton.pn_delivery_settle(delivery)
