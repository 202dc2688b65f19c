"""The failed-login throttle as a pure policy (time is an argument): free tries, a doubling
delay up to a ceiling, forgiveness after a success or a quiet spell, a bounded table."""

from __future__ import annotations

from ferrymq.security.throttle import LoginThrottle


def test_a_few_failures_are_free_then_the_delay_doubles_up_to_the_ceiling() -> None:
    throttle = LoginThrottle(free_failures=3, first_delay_s=0.25, max_delay_s=5.0)
    delays = [throttle.failed("10.0.0.1", float(n)) for n in range(10)]
    assert delays == [0.0, 0.0, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_addresses_are_counted_apart() -> None:
    throttle = LoginThrottle(free_failures=1, first_delay_s=1.0)
    assert throttle.failed("10.0.0.1", 0.0) == 0.0
    assert throttle.failed("10.0.0.1", 0.1) == 1.0
    assert throttle.failed("10.0.0.2", 0.2) == 0.0
    assert throttle.failures("10.0.0.1") == 2


def test_a_success_forgives() -> None:
    throttle = LoginThrottle(free_failures=1, first_delay_s=1.0)
    throttle.failed("10.0.0.1", 0.0)
    throttle.failed("10.0.0.1", 0.1)
    throttle.succeeded("10.0.0.1")
    assert throttle.failures("10.0.0.1") == 0
    assert throttle.failed("10.0.0.1", 0.2) == 0.0


def test_a_quiet_spell_forgives() -> None:
    throttle = LoginThrottle(free_failures=1, first_delay_s=1.0, forget_after_s=60.0)
    throttle.failed("10.0.0.1", 0.0)
    assert throttle.failed("10.0.0.1", 59.0) == 1.0
    assert throttle.failed("10.0.0.1", 59.0 + 60.0) == 0.0


def test_the_table_is_bounded_and_drops_the_longest_quiet_first() -> None:
    throttle = LoginThrottle(free_failures=0, first_delay_s=1.0, max_addresses=3)
    for n, address in enumerate(["a", "b", "c", "a", "d"]):
        throttle.failed(address, float(n))
    assert throttle.failures("b") == 0  # dropped: the longest without a failure
    assert (throttle.failures("a"), throttle.failures("c"), throttle.failures("d")) == (2, 1, 1)


def test_an_unknown_address_is_one_address() -> None:
    throttle = LoginThrottle(free_failures=0, first_delay_s=1.0)
    throttle.failed(None, 0.0)
    assert throttle.failures(None) == 1
