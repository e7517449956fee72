"""What to do with a publish an earlier run journaled but did not commit.

Roll forward when the crashed run's output still exists (as `{{ this }}` or as its new-output
table) and every file not yet in the table folder is still staged: finishing the renames and
making that output the snapshot gives exactly the state a successful run would have left.
Discard when no file reached the table folder. Otherwise the published files cannot be matched
by a snapshot: forget the journal and let the run plan rebuild the table (it will, because the
snapshot no longer matches the folder's last number).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from dbt.adapters.openmirror.publishing.publisher import PendingPublish

ROLL_FORWARD, DISCARD, ABANDON = "roll forward", "discard", "abandon"


@dataclass(frozen=True)
class Recovery:
    action: str
    #: Rename the crashed run's new-output table into `{{ this }}` (roll forward only).
    promote: bool
    message: str


def _span(names: Iterable[str]) -> str:
    names = sorted(names)
    if not names:
        return "no files"
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"


def decide(
    pending: PendingPublish,
    published_names: set[str],
    staged_names: set[str],
    snapshot_run_id: str | None,
    new_output_run_id: str | None,
) -> Recovery:
    """`published_names`: names in the table folder (and its processed folders); `staged_names`:
    names in the pending run's staged folder; the run ids recorded on `{{ this }}` and on the
    new-output table, None where the table is missing or carries no run id."""
    published = [n for n in pending.names if n in published_names]
    lost = [
        name
        for staged, name in pending.files
        if name not in published_names and staged.rsplit("/", 1)[-1] not in staged_names
    ]
    run = f"run {pending.run_id}"
    done = f"published {len(published)} of {len(pending.files)} files ({_span(published)})"
    if snapshot_run_id == pending.run_id and not lost:
        return Recovery(
            ROLL_FORWARD,
            False,
            (f"{run} stopped after making its output the snapshot; it {done}. Finishing its publish."),
        )
    if new_output_run_id == pending.run_id and not lost:
        return Recovery(
            ROLL_FORWARD,
            True,
            (
                f"{run} stopped before it finished; it {done}. Rolling forward: publishing the rest "
                "and making its output the snapshot."
            ),
        )
    if not published:
        return Recovery(DISCARD, False, (f"{run} stopped before publishing any file; discarding what it staged."))
    missing = "its staged files " + _span(lost) if lost else "its output table"
    return Recovery(
        ABANDON,
        False,
        (
            f"{run} {done} but {missing} can no longer be found, so the published files cannot be "
            "matched by a snapshot; the table will be rebuilt from the model output."
        ),
    )
