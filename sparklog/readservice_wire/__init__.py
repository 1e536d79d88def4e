"""The hot read service's wire format, shared by the server (:mod:`sparklog.readservice`) and
its client (the Spark connector), so the connector imports no server code.

- ``hot_read.proto`` defines ``HotRead.ReadRange(ReadRangeRequest) returns (stream
  RecordChunk)``; its proto package stays ``sparklog.readservice`` (it names the gRPC method
  ``/sparklog.readservice.HotRead/ReadRange`` on the wire). ``hot_read_pb2.py``,
  ``hot_read_pb2.pyi`` and ``hot_read_pb2_grpc.py`` are generated and committed. After editing
  the .proto, regenerate them from the repository root with exactly::

      python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=. \\
          sparklog/readservice_wire/hot_read.proto

  (``tests/unit/readservice/test_stubs.py`` fails while the committed stubs are stale).
- :mod:`.chunk_wire` encodes and decodes ``RecordChunk`` in protobuf's wire format without the
  generated class (which copies each chunk's megabytes twice); the service and the connector
  use it, other protobuf clients see no difference.

Imports no other sparklog package. Importing this package imports neither grpc nor protobuf;
``hot_read_pb2`` imports protobuf, ``hot_read_pb2_grpc`` grpc.
"""
