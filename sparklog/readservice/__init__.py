"""The hot read service: a gRPC listener on every broker that streams a partition's record
batches for an offset range to the Spark connector (ARCHITECTURE.md, "One read path for Spark").

- The wire format (``hot_read.proto``, its generated ``hot_read_pb2*`` modules and
  :mod:`~sparklog.readservice_wire.chunk_wire`) lives in :mod:`sparklog.readservice_wire`, which
  the connector imports instead of this server package.
- :mod:`.chunks` is the plain logic (control batches out, aborted transactions in, error
  mapping, the listener address); :mod:`.server` is the thin ``grpc.aio`` shell the node runs
  on its event loop.
- Listener: ``sparklog.read.listener=host:port`` (``port`` 0 = ephemeral; ``disabled`` turns
  the service off). Unset, the service listens on the host of the first broker listener with
  an ephemeral port. Discovery: the node reports the address it actually bound (wildcard hosts
  replaced by the advertised host) as the value of ``sparklog.read.listener`` in
  DescribeConfigs for its BROKER resource, so a reader asks the partition leader's Kafka
  listener for it; Metadata is unchanged.

Importing this package imports neither grpc nor the broker; the connector does not import it.
"""
