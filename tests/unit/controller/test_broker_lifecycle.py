"""Broker lifecycle on the controller (KIP-631): registration, heartbeats, leases, fencing,
leader moves, unfencing, controlled shutdown, unregistration — over a real metadata log."""

from __future__ import annotations

from pathlib import Path

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
)
from tests.unit.controller.test_quorum_controller import Node, create, topic

SESSION_MS = 9000


def registration(
    broker_id: int, incarnation: bytes, cluster_id: str = "c"
) -> BrokerRegistrationRequest:
    return {
        "broker_id": broker_id,
        "cluster_id": cluster_id,
        "incarnation_id": incarnation,
        "listeners": [
            {"name": "PLAINTEXT", "host": "h", "port": 9000 + broker_id, "security_protocol": 0}
        ],
        "features": [
            {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 27}
        ],
        "rack": None,
        "is_migrating_zk_broker": False,
        "log_dirs": [],
        "previous_broker_epoch": -1,
    }


def beat(
    node: Node, broker_id: int, epoch: int, now: int, offset: int | None = None, **flags: bool
) -> BrokerHeartbeatResponse:
    controller = node.controller
    body: BrokerHeartbeatRequest = {
        "broker_id": broker_id,
        "broker_epoch": epoch,
        "current_metadata_offset": (
            controller.image.provenance.last_offset if offset is None else offset
        ),
        "want_fence": flags.get("want_fence", False),
        "want_shut_down": flags.get("want_shut_down", False),
        "offline_log_dirs": [],
    }
    return controller.run(controller.broker_heartbeat(body, now))


def register(node: Node, broker_id: int, now: int, incarnation: bytes | None = None) -> int:
    controller = node.controller
    response = controller.run(
        controller.broker_registration(
            registration(broker_id, incarnation or bytes([broker_id + 100]) * 16), "c", now
        )
    )
    assert response["error_code"] == 0
    epoch: int = response["broker_epoch"]
    return epoch


def leaders(node: Node, name: str) -> dict[int, tuple[int, tuple[int, ...]]]:
    t = node.controller.image.topics.get_topic(name)
    assert t is not None
    return {p: (r.leader, r.isr) for p, r in t.partitions.items()}


def test_register_fenced_then_unfenced_when_caught_up(tmp_path: Path) -> None:
    node = Node(tmp_path, brokers=0)
    epoch = register(node, 5, now=0)
    broker = node.controller.image.cluster.broker(5)
    assert broker is not None and broker.fenced and broker.epoch == epoch
    behind = beat(node, 5, epoch, now=10, offset=epoch - 1)
    assert behind["is_fenced"] and not behind["is_caught_up"]
    caught_up = beat(node, 5, epoch, now=20)
    assert caught_up["error_code"] == 0 and not caught_up["is_fenced"]
    assert not node.controller.image.cluster.broker(5).fenced  # type: ignore[union-attr]


def test_registration_errors(tmp_path: Path) -> None:
    node = Node(tmp_path, brokers=0)
    controller = node.controller
    wrong_cluster = controller.run(
        controller.broker_registration(registration(5, b"\x01" * 16, "other"), "c", 0)
    )
    assert wrong_cluster["error_code"] == ErrorCode.INCONSISTENT_CLUSTER_ID
    epoch = register(node, 5, 0, b"\x01" * 16)
    beat(node, 5, epoch, now=1)
    duplicate = controller.run(
        controller.broker_registration(registration(5, b"\x02" * 16), "c", 2)
    )
    assert duplicate["error_code"] == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    # A retry of the same incarnation gets the same epoch, no new record.
    assert register(node, 5, 3, b"\x01" * 16) == epoch
    assert beat(node, 5, epoch + 1, now=4)["error_code"] == ErrorCode.STALE_BROKER_EPOCH
    assert beat(node, 9, 1, now=4)["error_code"] == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_lease_expiry_fences_and_moves_leaders(tmp_path: Path) -> None:
    node = Node(tmp_path, brokers=0)
    epochs = {b: register(node, b, 0) for b in (1, 2)}
    for b, e in epochs.items():
        assert not beat(node, b, e, now=1)["is_fenced"]
    create(node, topic("rf2", 2, 2), topic("rf1", 2, 1))
    before = leaders(node, "rf2")
    controller = node.controller
    assert controller.run(controller.fence_expired_brokers(SESSION_MS - 1)) == []
    beat(node, 2, epochs[2], now=SESSION_MS)  # broker 2 stays alive, broker 1 goes silent
    assert controller.run(controller.fence_expired_brokers(SESSION_MS + 1)) == [1]
    assert controller.image.cluster.broker(1).fenced  # type: ignore[union-attr]
    after = leaders(node, "rf2")
    for p, (leader, isr) in after.items():
        assert leader == 2 and isr == (2,), (p, before[p], after[p])
    for leader, isr in leaders(node, "rf1").values():
        if 1 in isr:  # RF=1 on the fenced broker: offline, as Kafka does
            assert leader == -1 and isr == (1,)
        else:
            assert leader == 2
    # Unfencing brings the offline RF=1 partitions back to their only replica.
    assert not beat(node, 1, epochs[1], now=SESSION_MS + 2)["is_fenced"]
    for leader, isr in leaders(node, "rf1").values():
        assert leader == isr[0]


def test_controlled_shutdown_moves_leaders_then_lets_go(tmp_path: Path) -> None:
    node = Node(tmp_path, brokers=0)
    epochs = {b: register(node, b, 0) for b in (1, 2)}
    for b, e in epochs.items():
        beat(node, b, e, now=1)
    create(node, topic("t", 4, 2))
    first = beat(node, 1, epochs[1], now=2, want_shut_down=True)
    assert not first["should_shut_down"]
    broker = node.controller.image.cluster.broker(1)
    assert broker is not None and broker.in_controlled_shutdown and not broker.fenced
    assert all(leader == 2 for leader, _ in leaders(node, "t").values())
    second = beat(node, 1, epochs[1], now=3, want_shut_down=True)
    assert second["should_shut_down"] and second["is_fenced"]


def test_reregistration_and_unregister(tmp_path: Path) -> None:
    node = Node(tmp_path, brokers=0)
    epoch = register(node, 1, 0, b"\x01" * 16)
    beat(node, 1, epoch, now=1)
    create(node, topic("t", 2, 1))
    # A restarted broker (new incarnation, old session expired) registers fenced: offline.
    new_epoch = register(node, 1, SESSION_MS * 2, b"\x02" * 16)
    assert new_epoch > epoch
    assert all(leader == -1 for leader, _ in leaders(node, "t").values())
    assert not beat(node, 1, new_epoch, now=SESSION_MS * 2 + 1)["is_fenced"]
    assert all(leader == 1 for leader, _ in leaders(node, "t").values())
    controller = node.controller
    response = controller.run(controller.unregister_broker({"broker_id": 1}))
    assert response["error_code"] == 0
    assert controller.image.cluster.broker(1) is None
    missing = controller.run(controller.unregister_broker({"broker_id": 1}))
    assert missing["error_code"] == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_offline_log_dirs_leave_the_registration(tmp_path: Path) -> None:
    node = Node(tmp_path, brokers=0)
    controller = node.controller
    dir_a, dir_b = b"a" * 16, b"b" * 16
    body = registration(7, b"i" * 16)
    body["log_dirs"] = [dir_a, dir_b]
    epoch = controller.run(controller.broker_registration(body, "c", 0))["broker_epoch"]
    beat(node, 7, epoch, now=10)

    def offline(dirs: list[bytes], now: int) -> int:
        heartbeat: BrokerHeartbeatRequest = {
            "broker_id": 7,
            "broker_epoch": epoch,
            "current_metadata_offset": controller.image.provenance.last_offset,
            "want_fence": False,
            "want_shut_down": False,
            "offline_log_dirs": dirs,
        }
        assert controller.run(controller.broker_heartbeat(heartbeat, now))["error_code"] == 0
        return controller.image.provenance.last_offset

    before = offline([], 20)
    after = offline([dir_a], 30)
    broker = controller.image.cluster.broker(7)
    assert after > before and broker is not None and broker.log_dirs == (dir_b,)
    assert not broker.fenced
    assert offline([dir_a], 40) == after  # already recorded: nothing more to write
