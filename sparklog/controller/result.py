"""ControllerResult: what a controller operation decided, before anything is written.

An operation reads the controller's current image and returns the records to append plus the
response to send once they are committed. It has no side effect; the driver
(:meth:`QuorumController.run`) appends the records, and the controller's state changes only
when they come back committed (write -> commit -> apply). ``image_offset`` pins the image the
decision was made on, so a result cannot be applied on top of a different state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from sparklog.metadata.records import MetadataRecord

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[R]):
    records: Sequence[MetadataRecord]
    response: R
    image_offset: int = -1
