"""JMS message selectors (JMS 1.1 §3.8.1), with ActiveMQ's STOMP conversions."""

from ferrymq.core.selector.errors import SelectorError
from ferrymq.core.selector.parser import MAX_NESTING_DEPTH, MAX_SELECTOR_LENGTH
from ferrymq.core.selector.selector import Lookup, Selector, parse_selector
from ferrymq.core.selector.tree import to_text

__all__ = [
    "MAX_NESTING_DEPTH",
    "MAX_SELECTOR_LENGTH",
    "Lookup",
    "Selector",
    "SelectorError",
    "parse_selector",
    "to_text",
]
