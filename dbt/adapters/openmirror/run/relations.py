"""The tables one model run builds beside `{{ this }}`, by the names dbt's `make_intermediate_relation`
and `make_backup_relation` give them."""

from dataclasses import dataclass
from typing import Any

#: The key hashes beside a snapshot (planning/hash_diff.py).
HASHES = "__om_hashes"


def beside(relation: Any, suffix: str) -> Any:
    """A table named after `relation` (as `make_intermediate_relation` names it)."""
    return relation.incorporate(path={"identifier": f"{relation.identifier}{suffix}"}, type="table")


@dataclass(frozen=True)
class RunRelations:
    """The tables one run builds beside `{{ this }}`. A run that publishes nothing (`--empty`,
    a dry run) builds beside the names a publishing run uses: it takes no lease."""

    target: Any
    new_output: Any
    backup: Any
    #: Key hashes of the output and of the snapshot (planning/hash_diff.py).
    new_hashes: Any
    previous_hashes: Any
    #: This run's changed keys.
    changes: Any
    #: The model's output before it is completed (candidate rows merged into the snapshot, rows
    #: flagged deleted left out): planning/candidates.py.
    model_output: Any
    #: An overlaid snapshot's base table (planning/overlay.py).
    base: Any

    def overlay(self, slot: str) -> Any:
        """One of the two overlay tables of an overlaid snapshot (planning/overlay.py)."""
        return beside(self.target, f"__om_overlay_{slot}")

    @classmethod
    def of(cls, this: Any, publishes: bool) -> "RunRelations":
        target = this.incorporate(type="table")
        prefix = "__om" if publishes else "__om_check"
        return cls(
            target=target,
            new_output=beside(target, f"{prefix}_new"),
            backup=beside(target, "__dbt_backup"),
            new_hashes=beside(target, f"{prefix}_new_hashes"),
            previous_hashes=beside(target, HASHES),
            changes=beside(target, f"{prefix}_changes"),
            model_output=beside(target, f"{prefix}_model_output"),
            base=beside(target, "__om_base"),
        )
