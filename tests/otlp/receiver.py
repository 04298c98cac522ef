"""An OTLP/HTTP trace receiver for genai's tests: it decodes what genai sends with
OpenTelemetry's own protobuf types (the `opentelemetry-proto` package from PyPI).

It listens on loopback, prints `listening PORT` first, then one JSON line per span it
receives on POST /v1/traces: trace_id, span_id, parent_id (hex), name, kind, status,
service (the resource's service.name) and attributes (values as JSON). It answers every
export with an empty ExportTraceServiceResponse. It never changes what it got.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    line = {
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "status": span.status.code,
                        "service": resource.get("service.name"),
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                    }
                    print(json.dumps(line), flush=True)
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()
