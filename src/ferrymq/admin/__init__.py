"""FerryMQ's admin HTTP listener: a JSON API and Prometheus metrics, read-only over the broker."""

from ferrymq.admin.metrics import render_metrics
from ferrymq.admin.routing import HttpError, Request, Response, Route, Router
from ferrymq.admin.server import AdminServer
from ferrymq.admin.source import (
    AdminSource,
    BrokerServiceSource,
    ConnectionStatistics,
    SubscriptionStatistics,
)

__all__ = [
    "AdminServer",
    "AdminSource",
    "BrokerServiceSource",
    "ConnectionStatistics",
    "HttpError",
    "Request",
    "Response",
    "Route",
    "Router",
    "SubscriptionStatistics",
    "render_metrics",
]
