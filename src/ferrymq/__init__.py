"""FerryMQ: a fault-tolerant STOMP message broker in Python, speaking ActiveMQ's dialect."""

__version__ = "0.1.0"

__all__ = ["__version__"]
