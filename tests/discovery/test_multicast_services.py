"""The multicast agent's decisions with time as an argument (reference §3.4): announce on first
hearing, expiry after ten silent keep-alive intervals, ``dead`` at once, and the hold-back of a
service its user reported failed, with its back-off, its give-up and its reset after 60 s."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ferrymq.discovery.multicast_options import MulticastOptions
from ferrymq.discovery.multicast_services import Heard, RemoteServices

A = "stomp://127.0.0.1:1"
OWN = "stomp://127.0.0.1:9"
KEEP_ALIVE = MulticastOptions(keep_alive_interval_ms=100)


def table(options: MulticastOptions = KEEP_ALIVE) -> RemoteServices:
    return RemoteServices(options, {OWN})


def test_a_service_is_new_once_then_known_and_our_own_is_never_announced() -> None:
    services = table()
    assert services.alive(A, 0.0) is Heard.NEW
    assert services.alive(A, 0.1) is Heard.KNOWN
    assert services.alive(OWN, 0.1) is Heard.OWN
    assert services.dead(OWN) is False
    assert services.announced() == [A]


def test_a_service_expires_after_ten_silent_keep_alive_intervals_not_before() -> None:
    services = table()
    services.alive(A, 0.0)
    services.alive(A, 0.5)
    assert services.expire(1.5) == []  # unheard for exactly 10 x 100 ms: still alive
    assert services.expire(1.501) == [A]
    assert services.announced() == []
    assert services.alive(A, 1.6) is Heard.NEW  # it came back


def test_a_dead_datagram_removes_at_once_and_only_once() -> None:
    services = table()
    services.alive(A, 0.0)
    assert services.dead(A) is True
    assert services.dead(A) is False
    assert services.expire(100.0) == []


def test_a_failed_service_is_held_back_until_its_recovery_time_then_its_heartbeat_adds_it() -> None:
    services = table(replace(KEEP_ALIVE, initial_reconnect_delay_ms=5000))
    services.alive(A, 0.0)
    assert services.failed(A, 1.0) is True
    assert services.failed(A, 1.1) is False  # already failed: one remove event
    assert services.announced() == []
    assert services.alive(A, 5.9) is Heard.KNOWN
    assert services.alive(A, 6.0) is Heard.RECOVERED
    assert services.alive(A, 6.1) is Heard.KNOWN
    assert services.announced() == [A]


def test_a_failed_service_does_not_expire_while_heard_and_leaves_silently() -> None:
    services = table()
    services.alive(A, 0.0)
    services.failed(A, 0.0)
    services.alive(A, 0.9)
    assert services.expire(1.5) == []
    assert services.expire(10.0) == []  # unheard: forgotten, but it was already removed
    assert services.services == {}
    services.alive(A, 11.0)
    services.failed(A, 11.0)
    assert services.dead(A) is False  # removed already; no second remove


@pytest.mark.parametrize(
    ("exponential", "delays"),
    [
        (False, [500, 500, 500, 500]),
        (True, [500, 1500, 4500, 5000]),
    ],
)
def test_the_recovery_delay_grows_from_initial_reconnect_delay_up_to_the_maximum(
    exponential: bool, delays: list[int]
) -> None:
    options = replace(
        KEEP_ALIVE,
        initial_reconnect_delay_ms=500,
        max_reconnect_delay_ms=5000,
        use_exponential_back_off=exponential,
        back_off_multiplier=3.0,
    )
    services = table(options)
    assert [services.recovery_delay_ms(n) for n in (1, 2, 3, 4)] == delays
    services.alive(A, 0.0)
    now = 0.0
    for delay in delays:
        services.failed(A, now)
        assert services.alive(A, now + delay / 1000 - 0.001) is Heard.KNOWN
        now += delay / 1000
        assert services.alive(A, now) is Heard.RECOVERED


def test_an_enormous_multiplier_is_capped_not_an_overflow() -> None:
    options = replace(KEEP_ALIVE, use_exponential_back_off=True, back_off_multiplier=1e300)
    assert table(options).recovery_delay_ms(1000) == options.max_reconnect_delay_ms


def test_max_reconnect_attempts_gives_a_failing_service_up_until_it_comes_back() -> None:
    options = replace(KEEP_ALIVE, initial_reconnect_delay_ms=0, max_reconnect_attempts=2)
    services = table(options)
    services.alive(A, 0.0)
    for now in (1.0, 2.0):
        services.failed(A, now)
        assert services.alive(A, now) is Heard.RECOVERED
    services.failed(A, 3.0)  # the third failure: given up
    assert services.alive(A, 100.0) is Heard.KNOWN
    assert services.dead(A) is False
    assert services.alive(A, 101.0) is Heard.NEW  # a restarted broker is a new service


def test_the_failure_count_resets_after_a_minute_without_failure() -> None:
    options = replace(KEEP_ALIVE, initial_reconnect_delay_ms=100, use_exponential_back_off=True)
    services = table(options)
    services.alive(A, 0.0)
    services.failed(A, 0.0)
    services.alive(A, 0.1)
    services.failed(A, 0.2)
    assert services.services[A].failures == 2
    services.alive(A, 0.4)  # recovered at 0.4
    services.alive(A, 60.3)
    assert services.services[A].failures == 2
    services.alive(A, 60.5)
    assert services.services[A].failures == 0
    services.failed(A, 61.0)
    assert services.services[A].recovery_at == pytest.approx(61.1)
