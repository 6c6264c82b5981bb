"""protoc-gen-grpc_python for buf: grpcio-tools' gRPC Python generator as a protoc plugin.

grpcio-tools bundles the generator inside its protoc but ships no plugin executable, so buf
cannot call it directly. This plugin takes buf's CodeGeneratorRequest, runs grpcio-tools'
protoc on the same descriptors, and returns the generated files. Run with the project's .venv
Python (buf.gen.yaml does), so the output matches the installed grpcio exactly.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def generate(request: plugin_pb2.CodeGeneratorRequest) -> plugin_pb2.CodeGeneratorResponse:
    """The gRPC Python files for ``request.file_to_generate``."""
    response = plugin_pb2.CodeGeneratorResponse(
        supported_features=plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
    )
    with tempfile.TemporaryDirectory() as tmp:
        descriptors = Path(tmp, "descriptors.binpb")
        descriptors.write_bytes(
            descriptor_pb2.FileDescriptorSet(file=request.proto_file).SerializeToString()
        )
        out = Path(tmp, "out")
        out.mkdir()
        option = f"{request.parameter}:" if request.parameter else ""
        status = protoc.main(
            [
                "grpc_tools.protoc",
                f"--descriptor_set_in={descriptors}",
                f"--grpc_python_out={option}{out}",
                *request.file_to_generate,
            ]
        )
        if status != 0:
            response.error = f"grpc_tools.protoc exited with status {status}"
            return response
        for path in sorted(out.rglob("*.py")):
            response.file.add(name=path.relative_to(out).as_posix(), content=path.read_text())
    return response


def main() -> None:
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    sys.stdout.buffer.write(generate(request).SerializeToString())


if __name__ == "__main__":
    main()
