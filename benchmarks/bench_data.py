"""Spark SQL for the benchmark's source tables, its model and its change rounds (deterministic)."""

from collections.abc import Callable

COLUMNS = [
    "l_orderkey",
    "l_partkey",
    "l_suppkey",
    "l_linenumber",
    "l_quantity",
    "l_extendedprice",
    "l_discount",
    "l_tax",
    "l_returnflag",
    "l_linestatus",
    "l_shipdate",
    "l_commitdate",
    "l_receiptdate",
    "l_shipinstruct",
    "l_shipmode",
    "l_comment",
]
#: Inserted rows get keys above every generated one; each round its own range.
INSERTED_KEY_OFFSET = 10_000_000_000

#: The benchmarked model, by shape, over the source tables loaded as `bench.<table>_src`.
#: `projection` publishes the source as it is: the model costs nothing but its write, the worst
#: case for the diff against `table`. `join` is a typical mart model: every line with columns of
#: its order (a left join: lines inserted by a change round have no order).
MODELS = {
    "projection": ("select * from bench.lineitem_src", ["lineitem"]),
    "join": (
        "select l.*, o.o_custkey, o.o_orderstatus, o.o_totalprice, o.o_orderdate, o.o_orderpriority, o.o_clerk\n"
        "from bench.lineitem_src l left join bench.orders_src o on o.o_orderkey = l.l_orderkey",
        ["lineitem", "orders"],
    ),
    # The source also carries `updated_at` (the round that last changed a row) and `deleted` (a
    # round's deletes are flagged, as Fivetran, Airbyte or Debezium sources mark them). `table` and
    # the full-diff `mirror` select the rows not flagged; `incremental` (dbt-spark, appending) and
    # `mirror_incremental` select the candidates (models/lineitem_*incremental.sql).
    "incremental": (f"select {', '.join(COLUMNS)}, updated_at from bench.lineitem_src where not deleted", ["lineitem"]),
}
#: Model shapes whose source flags deletes and stamps changes (see `incremental` above).
FLAGGED = {"incremental"}


def source_sql(table: str, parquet_uri: str, flagged: bool = False) -> str:
    stamps = ", 0L as updated_at, false as deleted" if flagged else ""
    return f"create table {table} using parquet as select *{stamps} from parquet.`{parquet_uri}`"


def change_round_sql(source: str, target: str, round_number: int, churn: float, flagged: bool = False) -> str:
    """`churn` of the rows are picked by a hash of their key and the round: a third deleted, a
    third updated (quantity and comment), a third copied as new rows under new keys. With
    `flagged`, deleted rows stay, flagged, and every row the round changes gets its number."""
    pick = _picked(round_number, churn)
    kind = f"pmod(xxhash64(l_orderkey, l_linenumber, {round_number + 7919}), 3)"
    updated = {
        "l_quantity": "cast(l_quantity + 1 as decimal(15,2))",
        "l_comment": f"concat('round {round_number} ', l_comment)",
    }
    kept = ", ".join(
        f"case when picked and kind = 1 then {updated[c]} else {c} end as {c}" if c in updated else c for c in COLUMNS
    )
    inserted = ", ".join(
        f"l_orderkey + {INSERTED_KEY_OFFSET * round_number} as l_orderkey" if c == "l_orderkey" else c for c in COLUMNS
    )
    if flagged:
        return (
            f"create table {target} using parquet as\n"
            f"with s as (select *, {pick} as picked, {kind} as kind from {source})\n"
            f"select {kept}, case when picked and kind < 2 then {round_number} else updated_at end as updated_at,\n"
            f"  deleted or (picked and kind = 0) as deleted from s\n"
            f"union all\n"
            f"select {inserted}, {round_number} as updated_at, false as deleted from s\n"
            f"where picked and kind = 2 and l_orderkey < {INSERTED_KEY_OFFSET} and not deleted"
        )
    return (
        f"create table {target} using parquet as\n"
        f"with s as (select *, {pick} as picked, {kind} as kind from {source})\n"
        f"select {kept} from s where not (picked and kind = 0)\n"
        f"union all\n"
        f"select {inserted} from s where picked and kind = 2 and l_orderkey < {INSERTED_KEY_OFFSET}"
    )


def _picked(round_number: int, churn: float) -> str:
    """Whether a row is among the `churn` a round picks (by a hash of its key and the round)."""
    return f"pmod(xxhash64(l_orderkey, l_linenumber, {round_number}), 1000000) < {int(round(churn * 1_000_000))}"


def _replaced_by(source: str, create_sql: Callable[[str], str]) -> list[str]:
    """The statements that replace `source` by the table `create_sql(target)` creates (written
    next to it, then renamed)."""
    following = f"{source}_next"
    return [
        f"drop table if exists {following}",
        create_sql(following),
        f"drop table {source}",
        f"alter table {following} rename to {source}",
    ]


def change_round_statements(source: str, round_number: int, churn: float, flagged: bool = False) -> list[str]:
    """The statements that replace `source` by its next round."""
    return _replaced_by(source, lambda target: change_round_sql(source, target, round_number, churn, flagged))


def unflagged_delete_statements(source: str, round_number: int, churn: float) -> list[str]:
    """Statements that delete `churn` of the source's rows outright, without a flag (a source
    whose deletes leave no trace: only a run in full can tell)."""
    kept = f"select * from {source} where not ({_picked(round_number, churn)})"
    return _replaced_by(source, lambda target: f"create table {target} using parquet as {kept}")
