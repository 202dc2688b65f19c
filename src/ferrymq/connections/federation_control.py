"""Remote policies: sent to the remote broker over a control link, as ActiveMQ Artemis does.

The control link is a sender with a dynamic target and the desired capability
``AMQ_FEDERATION_CONTROL_LINK``; the remote must offer it back, or it does not take federation
policies and the connection attempt fails (``LinkSetupError``, counted against
``reconnect-attempts``: Artemis closes the connection the same way). Each policy is one message:
the message annotation ``x-opt-amq-federation-op-type`` says which kind, the body is an
amqp-value map with Artemis's keys (``AMQPFederationPolicySupport``).
"""

from __future__ import annotations

from proton import Message, symbol

from ferrymq.amqp import federation_codes as fc
from ferrymq.config.broker_connections import (
    FederationAddressPolicy,
    FederationConfig,
    FederationMatch,
    FederationQueuePolicy,
)
from ferrymq.connections.api import LinkOptions, LinkSetupError, RemoteConnection, RemoteSender

__all__ = ["address_policy_message", "queue_policy_message", "send_remote_policies"]

FEDERATION_VERSION = 2


def _properties(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return dict(pairs)


def address_policy_message(policy: FederationAddressPolicy) -> bytes:
    body: dict[object, object] = {
        "policy-name": policy.name,
        "address-includes": [m.address_match for m in policy.includes],
        "address-excludes": [m.address_match for m in policy.excludes],
        "auto-delete": policy.auto_delete,
        "auto-delete-delay": policy.auto_delete_delay_ms,
        "auto-delete-msg-count": policy.auto_delete_message_count,
        "max-hops": policy.max_hops,
        "enable-divert-bindings": policy.enable_divert_bindings,
    }
    if policy.properties:
        body["policy-properties-map"] = _properties(policy.properties)
    return _encode(fc.ADD_ADDRESS_POLICY, body)


def _flat(matches: tuple[FederationMatch, ...]) -> list[str | None]:
    """Artemis's flat ``[address, queue, address, queue, ...]`` list."""
    return [item for m in matches for item in (m.address_match, m.queue_match)]


def queue_policy_message(policy: FederationQueuePolicy) -> bytes:
    body: dict[object, object] = {
        "policy-name": policy.name,
        "queue-includes": _flat(policy.includes),
        "queue-excludes": _flat(policy.excludes),
        "include-federated": policy.include_federated,
        "priority-adjustment": policy.priority_adjustment,
    }
    if policy.properties:
        body["policy-properties-map"] = _properties(policy.properties)
    return _encode(fc.ADD_QUEUE_POLICY, body)


def _encode(operation: str, body: dict[object, object]) -> bytes:
    message = Message(body=body, durable=True)
    message.annotations = {symbol(fc.OPERATION_TYPE): symbol(operation)}
    return bytes(message.encode())


async def send_remote_policies(
    remote: RemoteConnection, config: FederationConfig, *, federation: str
) -> RemoteSender | None:
    """Attach the control link and send every remote policy (None when there are none)."""
    messages = [address_policy_message(p) for p in config.remote_address_policies]
    messages += [queue_policy_message(p) for p in config.remote_queue_policies]
    if not messages:
        return None
    control = await remote.attach_sender(
        LinkOptions(
            name=f"federation.{federation}.control.{remote.container_id}",
            dynamic=True,
            desired_capabilities=(fc.CONTROL_LINK,),
            target_capabilities=("temporary-topic",),
            properties={
                fc.FEDERATION_VERSION: FEDERATION_VERSION,
                fc.FEDERATION_NAME: federation,
            },
        )
    )
    if fc.CONTROL_LINK not in control.offered_capabilities:
        await control.close()
        raise LinkSetupError(
            f"{remote.url} did not offer {fc.CONTROL_LINK} on the federation control link: "
            "it takes no remote federation policies (remove the remote-address-policy and "
            "remote-queue-policy elements, or configure a local policy on that broker)"
        )
    for encoded in messages:
        outcome = await control.send(encoded)
        if not outcome.accepted:
            await control.close()
            raise LinkSetupError(
                f"{remote.url} refused a federation policy ({outcome.outcome}: "
                f"{outcome.description})"
            )
    return control
