"""``suppressDuplicateQueueSubscriptions`` across every bridge of one broker (seed 001 §7.3).

In a mesh with networkTTL > 1 a broker hears of one queue consumer by several routes (Figure
7.2: directly from B, and through C). Each demand subscription says which real consumers it
stands for (``networkConsumerIds``); the registry lets only one route per real consumer be
open: the one with the highest priority, the first among equals. A route that is suppressed is
remembered, and opened when the route that beat it closes, so a consumer is never left without
a route while one exists (ActiveMQ forgets suppressed routes until the next advisory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ferrymq.network.demand import Demand


class RouteOwner(Protocol):
    """A bridge direction: it opens and closes the demand subscriptions it is told to."""

    def open_route(self, demand: Demand) -> None: ...

    def close_route(self, demand: Demand) -> None: ...


@dataclass(eq=False, slots=True)
class _Route:
    owner: RouteOwner
    demand: Demand
    open: bool


class RouteRegistry:
    def __init__(self) -> None:
        self._routes: list[_Route] = []

    def claim(self, owner: RouteOwner, demand: Demand) -> bool:
        """A new queue route: True when it may open now (others it beats are closed)."""
        ids = set(demand.original_ids)
        rivals = [r for r in self._routes if r.open and ids & set(r.demand.original_ids)]
        if any(r.demand.priority >= demand.priority for r in rivals):
            self._routes.append(_Route(owner, demand, open=False))
            return False
        for rival in rivals:
            rival.open = False
            rival.owner.close_route(rival.demand)
        self._routes.append(_Route(owner, demand, open=True))
        return True

    def release(self, owner: RouteOwner, demand: Demand) -> None:
        """A route is gone: the best suppressed route for the same consumers opens."""
        route = next((r for r in self._routes if r.demand is demand), None)
        if route is None:
            return
        self._routes.remove(route)
        if not route.open:
            return
        ids = set(demand.original_ids)
        waiting = [r for r in self._routes if not r.open and ids & set(r.demand.original_ids)]
        waiting.sort(key=lambda r: -r.demand.priority)
        for candidate in waiting:
            candidate_ids = set(candidate.demand.original_ids)
            if any(r.open and candidate_ids & set(r.demand.original_ids) for r in self._routes):
                continue
            candidate.open = True
            candidate.owner.open_route(candidate.demand)

    def forget_owner(self, owner: RouteOwner) -> None:
        """A bridge went away: its routes release theirs."""
        for route in [r for r in self._routes if r.owner is owner]:
            self.release(owner, route.demand)

    @property
    def suppressed(self) -> int:
        return sum(1 for r in self._routes if not r.open)
