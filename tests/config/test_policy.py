"""Choosing the destination policy and the redelivery policy for a destination."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrymq.config import (
    PolicyEntry,
    PolicyMap,
    RedeliveryPluginConfig,
    RedeliveryPolicyConfig,
    destination_matches,
)


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        # seed 002 "Destination wildcards"
        ("PRICE.>", "PRICE.STOCK.NASDAQ.IBM", True),
        ("PRICE.STOCK.>", "PRICE.STOCK.NYSE.SUNW", True),
        ("PRICE.STOCK.NASDAQ.*", "PRICE.STOCK.NASDAQ.IBM", True),
        ("PRICE.STOCK.NASDAQ.*", "PRICE.STOCK.NYSE.IBM", False),
        ("PRICE.STOCK.*.IBM", "PRICE.STOCK.NYSE.IBM", True),
        ("PRICE.STOCK.*.IBM", "PRICE.STOCK.NYSE.SUNW", False),
        ("PRICE.*", "PRICE.STOCK.NYSE", False),
        ("PRICE.>", "PRICE", True),  # ActiveMQ's PrefixDestinationFilter: A.> matches A
        (">", "ANYTHING.AT.ALL", True),
        ("TEST.FOO", "TEST.FOO", True),
        ("TEST.FOO", "TEST.FOO.BAR", False),
    ],
)
def test_destination_wildcards(pattern: str, name: str, matches: bool) -> None:
    assert destination_matches(pattern, name) is matches


_SEGMENT = st.from_regex(r"[A-Z]{1,3}", fullmatch=True)


@given(st.lists(_SEGMENT, min_size=1, max_size=5))
def test_a_name_matches_itself_and_its_prefix_wildcards(segments: list[str]) -> None:
    name = ".".join(segments)
    assert destination_matches(name, name)
    assert destination_matches(">", name)
    for cut in range(len(segments)):
        assert destination_matches(".".join([*segments[:cut], ">"]), name)
        star = [*segments[:cut], "*", *segments[cut + 1 :]]
        assert destination_matches(".".join(star), name)


def test_the_most_specific_entry_wins() -> None:
    everything = PolicyEntry(queue=">", max_page_size=1)
    orders = PolicyEntry(queue="ORDERS.>", max_page_size=2)
    any_region = PolicyEntry(queue="ORDERS.*", max_page_size=3)
    exact = PolicyEntry(queue="ORDERS.EU", max_page_size=4)
    topic = PolicyEntry(topic="ORDERS.EU", max_page_size=5)
    policies = PolicyMap((exact, everything, topic, any_region, orders))
    assert policies.policy_for(False, "ORDERS.EU") is exact
    assert policies.policy_for(False, "ORDERS.US") is any_region
    assert policies.policy_for(False, "ORDERS.US.WEST") is orders
    assert policies.policy_for(False, "INVOICES") is everything
    assert policies.policy_for(True, "ORDERS.EU") is topic
    # "A.*" is narrower than "A.*.>" (which also matches "A.B"), and ties go to the first entry.
    narrow, wide = PolicyEntry(queue="A.*"), PolicyEntry(queue="A.*.>")
    assert PolicyMap((wide, narrow)).policy_for(False, "A.B") is narrow
    first, second = PolicyEntry(queue="A.>", max_page_size=1), PolicyEntry(queue="A.>")
    assert PolicyMap((first, second)).policy_for(False, "A.B") is first


_PATTERN_PART = st.sampled_from(["A", "B", "*", ">"])


@given(
    st.lists(st.lists(_PATTERN_PART, min_size=1, max_size=3), max_size=6),
    st.lists(st.sampled_from(["A", "B"]), min_size=1, max_size=3),
)
def test_no_matching_entry_is_strictly_narrower_than_the_chosen_one(
    patterns: list[list[str]], segments: list[str]
) -> None:
    entries = tuple(PolicyEntry(queue=".".join(p)) for p in patterns)
    name = ".".join(segments)
    chosen = PolicyMap(entries).policy_for(False, name)
    matching = [e for e in entries if e.matches(False, name)]
    if not matching:
        assert chosen == PolicyEntry()
        return
    assert chosen in matching
    assert chosen.queue is not None
    for other in matching:
        assert other.queue is not None
        # "other" strictly inside "chosen": chosen covers it but not the other way round.
        narrower = destination_matches(chosen.queue, other.queue) and not destination_matches(
            other.queue, chosen.queue
        )
        assert not narrower, (chosen.queue, other.queue)


def test_default_entry_and_activemq_defaults() -> None:
    default = PolicyEntry(producer_flow_control=False)
    assert PolicyMap((PolicyEntry(topic=">"),), default).policy_for(False, "Q") is default
    assert PolicyMap().policy_for(False, "Q") == PolicyEntry()
    assert PolicyEntry().expire_messages_period_ms == 30000


def test_redelivery_policy_lookup() -> None:
    special = RedeliveryPolicyConfig(queue="SPECIAL.>", maximum_redeliveries=1)
    default = RedeliveryPolicyConfig(maximum_redeliveries=3)
    plugin = RedeliveryPluginConfig(entries=(special,), default_entry=default)
    assert plugin.policy_for(False, "SPECIAL.ONE") is special
    assert plugin.policy_for(True, "SPECIAL.ONE") is default
    assert RedeliveryPluginConfig().policy_for(False, "X") is None
    assert RedeliveryPolicyConfig().maximum_redeliveries == 6
