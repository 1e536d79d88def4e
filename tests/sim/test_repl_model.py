"""The replication simulator's model controller follows Kafka's rules (tests/sim/replication)."""

from __future__ import annotations

from sparklog.protocol.errors import ErrorCode
from sparklog.replication.messages import AlterPartitionProposal
from tests.sim.replication.model import ControllerModel

REPLICAS = (0, 1, 2)


def proposal(
    controller: ControllerModel, isr: tuple[int, ...], *, leader_epoch: int | None = None
) -> AlterPartitionProposal:
    epochs = {b: r.broker_epoch for b, r in controller.registrations.items()}
    return AlterPartitionProposal(
        proposal_id=1,
        leader_id=controller.leader,
        leader_epoch=controller.leader_epoch if leader_epoch is None else leader_epoch,
        partition_epoch=controller.partition_epoch,
        new_isr=tuple((b, epochs[b]) for b in isr),
        expand=False,
    )


def alter(controller: ControllerModel, p: AlterPartitionProposal) -> int:
    leader = p.leader_id
    return controller.alter_partition(
        leader, controller.registrations[leader].broker_epoch, p
    ).error


def test_alter_partition_commits_and_bumps_the_partition_epoch() -> None:
    controller = ControllerModel(REPLICAS, 2, 300)
    answer = controller.alter_partition(0, 1, proposal(controller, (0, 1)))
    assert answer.error == ErrorCode.NONE
    assert (answer.isr, answer.partition_epoch, answer.leader_epoch) == ((0, 1), 1, 0)
    assert controller.isr == (0, 1)


def test_stale_partition_epoch_is_invalid_update_version() -> None:
    controller = ControllerModel(REPLICAS, 2, 300)
    stale = proposal(controller, (0, 1))
    assert alter(controller, stale) == ErrorCode.NONE
    assert alter(controller, stale) == ErrorCode.INVALID_UPDATE_VERSION


def test_stale_leader_epoch_is_fenced_leader_epoch() -> None:
    controller = ControllerModel(REPLICAS, 2, 300)
    old = proposal(controller, (0, 1, 2))
    controller.tick(1000)  # every session expired: all fenced, no leader
    for broker in REPLICAS:
        controller.heartbeat(broker, controller.registrations[broker].broker_epoch, 1000)
    assert controller.leader_epoch > old.leader_epoch
    answer = controller.alter_partition(0, 1, old)
    assert answer.error == ErrorCode.FENCED_LEADER_EPOCH


def test_fenced_or_stale_epoch_member_is_ineligible() -> None:
    controller = ControllerModel(REPLICAS, 2, 300)
    for broker in (0, 1):
        controller.heartbeat(broker, controller.registrations[broker].broker_epoch, 250)
    controller.tick(400)  # broker 2 expires
    assert controller.registrations[2].fenced and 2 not in controller.isr
    assert alter(controller, proposal(controller, (0, 1, 2))) == ErrorCode.INELIGIBLE_REPLICA
    stale = proposal(controller, (0, 1))
    stale = AlterPartitionProposal(
        1, 0, stale.leader_epoch, stale.partition_epoch, ((0, 1), (1, 99)), True
    )
    assert alter(controller, stale) == ErrorCode.INELIGIBLE_REPLICA


def test_restart_waits_for_session_expiry_and_leaves_isr_and_elr() -> None:
    controller = ControllerModel(REPLICAS, 2, 300)
    error, _ = controller.register(0, incarnation=2, now_ms=100)
    assert error == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    for broker in (1, 2):
        controller.heartbeat(broker, controller.registrations[broker].broker_epoch, 350)
    error, epoch = controller.register(0, incarnation=2, now_ms=400)
    assert error == ErrorCode.NONE and epoch > 3
    assert controller.leader == 1 and controller.leader_epoch == 1
    assert 0 not in controller.isr and 0 not in controller.elr
    assert controller.registrations[0].fenced


def test_election_from_elr_only_when_isr_is_empty_and_unclean_restart_leaves_elr() -> None:
    controller = ControllerModel(REPLICAS, 2, 300)
    controller.tick(301)  # all three fenced, in order
    assert controller.leader == -1 and controller.isr == ()
    # 0 left while the ISR was still at min ISR (it may miss later commits): not in the ELR.
    assert controller.elr == (1, 2)
    error, _ = controller.register(1, incarnation=2, now_ms=310)  # unclean restart
    assert error == ErrorCode.NONE and list(controller.elr) == [2]
    controller.heartbeat(1, controller.registrations[1].broker_epoch, 320)
    assert controller.leader == -1  # 1 lost its unflushed data: not eligible
    controller.heartbeat(0, controller.registrations[0].broker_epoch, 325)
    assert controller.leader == -1  # fenced, not clean-restarted, but not in the ELR either
    controller.heartbeat(2, controller.registrations[2].broker_epoch, 330)
    assert controller.leader == 2
    assert (list(controller.isr), list(controller.elr)) == ([2], [])
