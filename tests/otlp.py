"""An OTLP/gRPC trace receiver in the test process (the OpenTelemetry collector's protocol, from
opentelemetry-proto's TraceService stubs): the tracing tests and ``make bench`` export to it."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC trace receiver: counts the spans it is sent and keeps every request
    (``keep``; a benchmark's receiver only counts)."""

    def __init__(self, keep: bool = True) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.received = 0
        self._keep = keep
        self._lock = threading.Lock()

    def Export(  # noqa: N802 (the OTLP service's method)
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        count = sum(
            len(scope.spans) for spans in request.resource_spans for scope in spans.scope_spans
        )
        with self._lock:
            self.received += count
            if self._keep:
                self.requests.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()

    def spans(self) -> list[trace_pb2.Span]:
        with self._lock:
            return [
                span
                for request in self.requests
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            ]

    def resources(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                attributes(resource.resource.attributes)
                for request in self.requests
                for resource in request.resource_spans
            ]


def value(any_value: common_pb2.AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: value(pair.value) for pair in pairs}


@contextlib.contextmanager
def receiving(keep: bool = True) -> Iterator[tuple[Receiver, int]]:
    """A receiver listening on a free loopback port: it and the port."""
    servicer = Receiver(keep)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    # Generated without annotations.
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield servicer, port
    finally:
        server.stop(None)
