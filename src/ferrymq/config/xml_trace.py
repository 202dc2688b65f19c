"""FerryMQ's `<plugins><messageTracePlugin>`: the message trace read by `ferrymq audit`.

ActiveMQ's own tracing plugins (loggingBrokerPlugin, the timeStampingBrokerPlugin) log or stamp
messages; this one writes one JSON line per message event into rotated files, so it gets a name
of its own rather than borrowing one with other semantics.
"""

from __future__ import annotations

from ferrymq.config.model import MessageTraceConfig
from ferrymq.config.xml_document import Element, LoadContext

__all__ = ["read_message_trace"]


def read_message_trace(context: LoadContext, element: Element) -> MessageTraceConfig:
    reader = context.reader(element)
    directory = reader.path("directory")
    if directory is None:
        raise reader.error("required attribute is missing", "directory")
    defaults = MessageTraceConfig(directory)
    max_file_size = reader.size("maxFileSize")
    if max_file_size is not None and max_file_size < 4096:
        raise reader.error("a trace file must be allowed at least 4 kb", "maxFileSize")
    config = MessageTraceConfig(
        directory=directory,
        max_file_size=defaults.max_file_size if max_file_size is None else max_file_size,
        max_files=reader.integer("maxFiles", defaults.max_files, minimum=0),
        max_queued_records=reader.integer(
            "maxQueuedRecords", defaults.max_queued_records, minimum=1
        ),
        location=reader.location(),
    )
    reader.children(())
    reader.finish()
    return config
