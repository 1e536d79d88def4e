"""The hot read service: a gRPC listener on every broker that streams a partition's record
batches for an offset range to the Spark connector (ARCHITECTURE.md, "One read path for Spark").

- ``hot_read.proto`` defines ``HotRead.ReadRange(ReadRangeRequest) returns (stream
  RecordChunk)``; ``hot_read_pb2.py``, ``hot_read_pb2.pyi`` and ``hot_read_pb2_grpc.py`` are
  generated and committed. After editing the .proto, regenerate them from the repository root
  with exactly::

      python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=. \\
          sparklog/readservice/hot_read.proto

  (``tests/unit/readservice/test_stubs.py`` fails while the committed stubs are stale).
- :mod:`.chunks` is the plain logic (control batches out, aborted transactions in, error
  mapping, the listener address); :mod:`.server` is the thin ``grpc.aio`` shell the node runs
  on its event loop. :mod:`.chunk_wire` encodes and decodes ``RecordChunk`` in protobuf's wire
  format without the generated class (which copies each chunk's megabytes twice); the service
  and the connector use it, other protobuf clients see no difference.
- Listener: ``sparklog.read.listener=host:port`` (``port`` 0 = ephemeral; ``disabled`` turns
  the service off). Unset, the service listens on the host of the first broker listener with
  an ephemeral port. Discovery: the node reports the address it actually bound (wildcard hosts
  replaced by the advertised host) as the value of ``sparklog.read.listener`` in
  DescribeConfigs for its BROKER resource, so a reader asks the partition leader's Kafka
  listener for it; Metadata is unchanged.

Importing this package imports neither grpc nor the broker; the connector imports only the
generated message modules and :mod:`.chunk_wire`.
"""
