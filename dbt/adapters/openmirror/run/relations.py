"""The tables one model run builds beside `{{ this }}`, by the names dbt's `make_intermediate_relation`
and `make_backup_relation` give them."""

from dataclasses import dataclass
from typing import Any

from dbt.adapters.openmirror.planning.overlay import OVERLAY_SLOTS

#: Every table a run builds beside `{{ this }}` is `<this>__om_*`, but the backup, which dbt's own
#: materializations name `<this>__dbt_backup`: a model of such a name would be overwritten.
OWN_PREFIX = "__om_"
BACKUP = "__dbt_backup"
#: The key hashes beside a snapshot (planning/hash_diff.py).
HASHES = f"{OWN_PREFIX}hashes"
#: A run that publishes nothing builds its work tables under names of its own.
CHECK_PREFIX = f"{OWN_PREFIX}check_"
WORK_TABLES = ("new", "new_hashes", "changes", "model_output")
SNAPSHOT_SIDE_TABLES = ("base", "audit_base", "audit_base_hashes")
OVERLAY = f"{OWN_PREFIX}overlay_"
#: Every suffix a run gives a table beside `{{ this }}`.
OWN_SUFFIXES = (
    *(f"{prefix}{name}" for prefix in (OWN_PREFIX, CHECK_PREFIX) for name in WORK_TABLES),
    *(f"{OWN_PREFIX}{name}" for name in SNAPSHOT_SIDE_TABLES),
    *(f"{OVERLAY}{slot}" for slot in OVERLAY_SLOTS),
    HASHES,
    BACKUP,
)
#: A managed table's folder is named as the table, and a folder name takes 255 bytes: the
#: relation's own name leaves room for the longest suffix (Spark's rename to a longer name fails
#: without an error, and the run then finds the old folder in its way).
MAX_IDENTIFIER_LENGTH = 255 - max(map(len, OWN_SUFFIXES))


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
    #: Where a change held for its tests keeps the published snapshot and its key hashes
    #: meanwhile (run/held_changes.py).
    audit_base: Any
    audit_base_hashes: Any
    publishes: bool

    def overlay(self, slot: str) -> Any:
        """One of the two overlay tables of an overlaid snapshot (planning/overlay.py)."""
        return beside(self.target, f"{OVERLAY}{slot}")

    def layers(self) -> list[Any]:
        """An overlaid snapshot's tables under its view: the base and both overlays."""
        return [self.base, *(self.overlay(slot) for slot in OVERLAY_SLOTS)]

    def kept_aside(self) -> list[tuple[Any, Any]]:
        """The snapshot and its key hashes, each with where a held change keeps it meanwhile."""
        return [(self.target, self.audit_base), (self.previous_hashes, self.audit_base_hashes)]

    def written(self) -> list[Any]:
        """The tables whose folders a run of this kind repairs before its first statement
        (run/folder_repair.py): the ones it alone writes. A publishing run's (it holds the lease)
        are the snapshot's too: `{{ this }}`, its hashes, base, overlays and what a held change
        keeps. A run without a lease repairs only its own `__om_check_*` tables."""
        work = [self.new_output, self.new_hashes, self.changes, self.model_output]
        if not self.publishes:
            return work
        return [*self.snapshot_tables(), self.backup, *work, self.audit_base, self.audit_base_hashes]

    def snapshot_tables(self) -> list[Any]:
        """The snapshot's tables: `{{ this }}`, its key hashes and an overlaid snapshot's layers."""
        return [self.target, self.previous_hashes, *self.layers()]

    def read_only(self) -> list[Any]:
        """The snapshot's tables a run without a lease reads but must not repair (the next
        publishing run does)."""
        return [] if self.publishes else self.snapshot_tables()

    def renamed(self) -> list[tuple[Any, Any]]:
        """Every rename a run of this kind makes, from and to: a folder moves back only along one
        of these (run/folder_repair.py)."""
        renames = [(self.new_output, self.model_output), (self.new_output, self.target)]
        if not self.publishes:
            return renames
        kept_aside = self.kept_aside()
        return [
            *renames,
            (self.target, self.backup),
            (self.target, self.base),
            (self.new_hashes, self.previous_hashes),
            *kept_aside,
            *((aside, kept) for kept, aside in kept_aside),
        ]

    @classmethod
    def of(cls, this: Any, publishes: bool) -> "RunRelations":
        target = this.incorporate(type="table")
        work = OWN_PREFIX if publishes else CHECK_PREFIX
        new_output, new_hashes, changes, model_output = (beside(target, f"{work}{name}") for name in WORK_TABLES)
        base, audit_base, audit_base_hashes = (beside(target, f"{OWN_PREFIX}{name}") for name in SNAPSHOT_SIDE_TABLES)
        return cls(
            target=target,
            new_output=new_output,
            backup=beside(target, BACKUP),
            new_hashes=new_hashes,
            previous_hashes=beside(target, HASHES),
            changes=changes,
            model_output=model_output,
            base=base,
            audit_base=audit_base,
            audit_base_hashes=audit_base_hashes,
            publishes=publishes,
        )
