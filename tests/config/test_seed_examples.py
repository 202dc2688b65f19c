"""Every activemq.xml example in seeds 000-003 loads, with the values the seed gives it, and
every ActiveMQ Artemis broker.xml example of seed 004 loads inside `<configuration><core>`
(issue 15, item 8; issue 18).

`CASES` names each example found by `seed_xml.extract_examples` by seed, example or figure number
(or section, when the seed gives none) and line, and spot-checks the model values that example is
about. A test fails if the seeds hold an example the table does not list, so none is skipped.

Beyond the placeholders `seed_xml.normalise` removes, the table repairs a few examples, each with
its reason, and checks that the damage is still in the seed:

* `TYPOS`: four typos in seed 001 and one in seed 002, each repaired to the form another seed
  prints for the same example;
* `SUPPLIED`: examples whose "..." stands for the `remoteFactory` bean that seed 001 defines in
  the preceding example of the same section; the bean is copied from there;
* seed 003 Example 3.1 lost its `<persistenceAdapter>`/`<locker>` lines in extraction; the test
  proves the surviving lines are seed 000 Example 3.1 in order and loads that one.

The Camel examples of seed 001 chapter 10 are not broker configurations: the seed deploys them
as `deploy/jms-bridge.xml` and says the Camel bridge "must not be embedded inside the broker
configuration file". They must be rejected.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from ferrymq.config import (
    BrokerConfig,
    ConfigError,
    JdbcPersistenceConfig,
    KahaDBConfig,
    parse_config,
)
from ferrymq.util.uri import CompositeURI
from tests.config.seed_cases import ARTEMIS, CASES, NOT_BROKER, PROPERTIES, SUPPLIED, TYPOS, Case
from tests.config.seed_xml import SEEDS, Example, extract_examples, normalise, wrap


def _examples() -> dict[tuple[str, int], Example]:
    return {(e.seed, e.line): e for seed in SEEDS for e in extract_examples(seed)}


EXAMPLES = _examples()


def _get(obj: Any, path: str) -> Any:
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        obj = obj[int(part[1:-1])] if part.startswith("[") else getattr(obj, part)
    return obj


def _remote_factory_bean() -> str:
    match = re.search(r'<bean id="remoteFactory".*?</bean>', EXAMPLES["001", 1890].text, re.DOTALL)
    assert match is not None
    return match.group()


def _prepare(case: Case, example: Example) -> str:
    text = example.text
    for printed, repaired, _why in TYPOS.get((case.seed, case.line), []):
        assert printed in text, f"typo no longer in the seed, remove the fix: {printed!r}"
        text = text.replace(printed, repaired)
    text = wrap(normalise(text))
    if (case.seed, case.line) in SUPPLIED:
        if "<beans" in text:
            text = text.replace("</beans>", _remote_factory_bean() + "\n</beans>")
        else:
            text = f"<beans>\n{text}\n{_remote_factory_bean()}\n</beans>\n"
    return text


def _tags(text: str) -> list[str]:
    return [" ".join(tag.split()) for tag in re.findall(r"<[^<>]+>", text)]


def test_the_table_lists_every_example_in_the_seeds() -> None:
    listed = {(c.seed, c.line) for c in CASES}
    assert listed == set(EXAMPLES), "seed examples changed: update CASES"
    assert len(CASES) == 74 + 18


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.rejected is None and (c.seed, c.line) != ("003", 75)],
    ids=lambda c: f"seed{c.seed}-line{c.line}-{c.label}",
)
def test_example_loads(case: Case) -> None:
    config = parse_config(_prepare(case, EXAMPLES[case.seed, case.line]), "x.xml", PROPERTIES)
    assert isinstance(config, BrokerConfig)
    assert case.expect, "every example spot-checks something"
    for path, expected in case.expect.items():
        assert _get(config, path) == expected, path


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.rejected == NOT_BROKER],
    ids=lambda c: f"seed{c.seed}-line{c.line}-{c.label}",
)
def test_camel_examples_are_not_broker_configurations(case: Case) -> None:
    example = EXAMPLES[case.seed, case.line]
    assert "<broker" not in example.text
    assert "camel" in example.text.lower() or "websphere" in example.text.lower()
    with pytest.raises(ConfigError):
        parse_config(normalise(example.text), "jms-bridge.xml", PROPERTIES)


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.rejected == ARTEMIS],
    ids=lambda c: f"seed{c.seed}-line{c.line}-{c.label}",
)
def test_artemis_examples_load_inside_core(case: Case) -> None:
    """Seed 004's broker.xml fragments load where a user pastes them, inside
    `<configuration><core>` (issue 18; tests/config/test_artemis_examples.py checks their
    values); given bare, the error says where they belong."""
    example = EXAMPLES[case.seed, case.line]
    text = normalise(example.text).replace("HOST:PORT", "127.0.0.1:5672")
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "broker.xml")
    root = re.match(r"\s*<([\w-]+)", example.text)
    assert root is not None
    assert caught.value.element.startswith(f"<{root.group(1)}")
    assert "put it inside <configuration><core>" in str(caught.value)
    config = parse_config(f"<configuration><core>{text}</core></configuration>", "broker.xml")
    assert config.broker_name == "localhost"


def test_seed003_example_3_1_is_seed000_example_3_1_with_lines_lost() -> None:
    damaged = EXAMPLES["003", 75]
    original = EXAMPLES["000", 761]
    assert not damaged.complete
    with pytest.raises(ConfigError, match="not well-formed"):
        parse_config(normalise(damaged.text), "seed003.xml")
    # Its tags are, in order, a subsequence of seed 000's Example 3.1 (whitespace aside).
    remaining = iter(_tags(original.text))
    for tag in _tags(damaged.text):
        assert any(tag == candidate for candidate in remaining), tag
    config = parse_config(wrap(normalise(original.text)), "seed000.xml")
    for path, expected in _case("003", 75).expect.items():
        assert _get(config, path) == expected, path


def test_typo_fixes_match_the_other_seed() -> None:
    # The repaired forms are what the sibling example in the other seed prints.
    assert 'physicalName="TRADE.STOCK.>"' in EXAMPLES["002", 527].text
    assert 'physicalName=">"' in EXAMPLES["002", 680].text
    assert 'updateClusterFilter="A.*,B.*"' in " ".join(EXAMPLES["000", 257].text.split())


def test_supplied_bean_is_really_omitted() -> None:
    for key in SUPPLIED:
        text = EXAMPLES[key].text
        assert "#remoteFactory" in text
        assert 'id="remoteFactory"' not in text


def test_the_placeholders_are_really_there() -> None:
    # Unnormalised, the seed text is not XML: "<beans ... >" and the callout numbers.
    with pytest.raises(ConfigError, match="not well-formed"):
        parse_config(EXAMPLES["000", 257].text, "raw.xml")


def test_normalise_removes_only_placeholders() -> None:
    # Ellipses outside quotes and callout numbers go; dots inside attribute values stay.
    text = (
        '<beans ... >\n  ...\n  1 <broker brokerName="a...b"...\n'
        '  2   start="x..." ... />\n</beans>'
    )
    expected = '<beans   >\n  <broker brokerName="a...b"\n  start="x..."   />\n</beans>\n'
    assert normalise(text) == expected


def test_wrap_puts_fragments_where_they_belong() -> None:
    assert (
        wrap("<kahaDB/>")
        == "<broker><persistenceAdapter>\n<kahaDB/>\n</persistenceAdapter></broker>\n"
    )
    assert wrap("<broker/>") == "<broker/>"
    with pytest.raises(ValueError, match="camelContext"):
        wrap("<camelContext/>")


def test_the_loaded_kinds_match_the_seeds() -> None:
    jdbc = parse_config(_prepare(_case("000", 837), EXAMPLES["000", 837]), "x.xml")
    assert isinstance(jdbc.persistence, JdbcPersistenceConfig)
    kaha = parse_config(_prepare(_case("000", 761), EXAMPLES["000", 761]), "x.xml")
    assert isinstance(kaha.persistence, KahaDBConfig)
    network = parse_config(_prepare(_case("000", 940), EXAMPLES["000", 940]), "x.xml")
    assert isinstance(network.network_connectors[0].parsed_uri, CompositeURI)


def _case(seed: str, line: int) -> Case:
    return next(c for c in CASES if (c.seed, c.line) == (seed, line))


def test_snapshot_holds_what_the_seeds_hold() -> None:
    """The committed snapshot is what the extractor finds in the seeds, where they are present
    (beside the repository); elsewhere it at least names the seed files it came from."""
    from tests.config.seed_xml import SEEDS, extract_from_seed, seed_path

    for prefix in SEEDS:
        snapshot = extract_examples(prefix)
        assert snapshot
        try:
            path = seed_path(prefix)
        except FileNotFoundError:
            continue
        assert snapshot == extract_from_seed(prefix), f"refresh the snapshot from {path}"
