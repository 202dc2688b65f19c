"""The admin API and ``/metrics`` show AMQP connections and their links beside STOMP ones
(issue 17, item 7), over real HTTP in front of a real broker with both kinds of client."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from ferrymq.testing import wait_until_blocking

from .mixed_clients import ADDRESS, CONTAINER, CREDIT, SENT, amqp_connection, mixed_clients

WAIT_S = 10.0


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def connections(base: str) -> list[dict[str, Any]]:
    return list(json.loads(get(base + "/api/v1/connections"))["connections"])


def test_connections_show_their_protocol_version_and_amqp_links(tmp_path: Path) -> None:
    with mixed_clients(tmp_path) as mixed:
        base = mixed.admin_url

        def links_settled() -> bool:
            links = amqp_connection(connections(base))["links"]
            return any(link["role"] == "sender" and link["unsettled"] == SENT for link in links)

        wait_until_blocking(links_settled, WAIT_S, "the consumer link's unsettled deliveries")
        listed = connections(base)
        by_protocol = {c["protocol"]: c for c in listed}
        assert sorted(by_protocol) == ["AMQP", "STOMP"]

        stomp = by_protocol["STOMP"]
        assert (stomp["version"], stomp["stomp_version"], stomp["links"]) == ("1.2", "1.2", [])
        assert [s["destination"]["name"] for s in stomp["subscriptions"]] == ["stomp.watched"]

        amqp = amqp_connection(listed)
        assert (amqp["version"], amqp["stomp_version"]) == ("1.0", None)
        assert amqp["client_id"] == CONTAINER
        links = sorted(amqp["links"], key=lambda link: link["role"])
        assert links == [
            {
                "name": "orders-producer",
                "role": "receiver",
                "address": ADDRESS,
                "credit": links[0]["credit"],
                "unsettled": 0,
            },
            {
                "name": "orders-consumer",
                "role": "sender",
                "address": ADDRESS,
                "credit": CREDIT - SENT,
                "unsettled": SENT,
            },
        ]
        assert links[0]["credit"] > 0  # the producer may send
        # Its consumer is a subscription of the connection too, as a STOMP one is.
        assert [s["destination"]["name"] for s in amqp["subscriptions"]] == ["orders"]


def test_metrics_count_connections_by_protocol_and_links_by_role(tmp_path: Path) -> None:
    with mixed_clients(tmp_path) as mixed:
        text = get(mixed.admin_url + "/metrics")
    assert 'ferrymq_protocol_connections{protocol="AMQP"} 1.0' in text
    assert 'ferrymq_protocol_connections{protocol="STOMP"} 1.0' in text
    assert 'ferrymq_links{protocol="AMQP",role="sender"} 1.0' in text
    assert 'ferrymq_links{protocol="AMQP",role="receiver"} 1.0' in text
    assert "ferrymq_connections 2.0" in text
