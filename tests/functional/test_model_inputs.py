"""The digest of what a model reads (spark/model_inputs.py), on the session dbt runs on: equal for
the same inputs planned again, different for any change that can change the output, and absent
where it could not vouch for the output."""

import os
import time

import pytest
from pyspark.sql import SparkSession

from dbt.adapters.openmirror.spark.model_inputs import ADAPTER_SETTINGS, SETTLED_SECONDS, model_inputs
from tests.support.mirror import settle


class TestModelInputs:
    @pytest.fixture(scope="class")
    def session(self, project):
        # dbt's session connection opened it with the profile's settings (the project fixture).
        return SparkSession.builder.getOrCreate()

    @pytest.fixture(scope="class")
    def csv_dir(self, tmp_path_factory):
        folder = tmp_path_factory.mktemp("csv")
        (folder / "part.csv").write_text("1,a\n2,b\n")
        return folder

    @pytest.fixture(autouse=True)
    def settled(self, spark_dirs, csv_dir):
        """What the digests read: the warehouse's tables and the CSV files."""
        self.settled_roots = (spark_dirs / "warehouse", csv_dir)

    def digest(self, session, sql, context=("model",)):
        settle(*self.settled_roots)  # written well before the run, as a scheduled run finds them
        inputs = model_inputs(session, sql, list(context))
        assert inputs.digest is not None, inputs.reason
        return inputs.digest

    def test_the_same_inputs_planned_again_give_the_same_digest(self, session, project, csv_dir):
        schema = project.test_schema
        session.sql(f"create table {schema}.facts using parquet as select id, id % 3 as g from range(50)")
        sql = f"""
            with g as (select g, count(*) as n from {schema}.facts group by g)
            select f.id, g.n, upper(c._c1) as label,
                   (select max(id) from {schema}.facts) as top
            from {schema}.facts f join g on f.g = g.g
            left join csv.`{csv_dir}` c on f.id = cast(c._c0 as int)
            where f.id in (select id from {schema}.facts where id < 40)
        """
        first = self.digest(session, sql)
        assert self.digest(session, sql) == first
        assert self.digest(session, sql, ("other model",)) != first
        # Rewritten in place under the same name and size: the modification time tells.
        time.sleep(0.01)
        (csv_dir / "part.csv").write_text("1,a\n2,c\n")
        changed = self.digest(session, sql)
        assert changed != first
        os.utime(csv_dir / "part.csv", ns=(0, 0))
        assert self.digest(session, sql) not in (first, changed)
        # A table rewritten by Spark (new files).
        session.sql(f"insert into {schema}.facts select 99, 0")
        assert self.digest(session, sql) not in (first, changed)

    def test_a_partitioned_table_is_digested_by_its_partitions_files(self, session, project):
        table = f"{project.test_schema}.parted"
        session.sql(f"create table {table} using parquet partitioned by (p) as select id, id % 3 as p from range(9)")
        sql = f"select * from {table} where p = 1"
        before = self.digest(session, sql)
        assert self.digest(session, sql) == before
        session.sql(f"insert into {table} select 2, 2")  # another partition: what the model reads is unchanged
        assert self.digest(session, sql) == before
        session.sql(f"insert into {table} select 10, 1")
        assert self.digest(session, sql) != before

    @pytest.mark.parametrize(
        "one, other",
        [
            ("values (1, 'a') as t(id, label)", "values (1, 'b') as t(id, label)"),
            ("values (1, 'null'), (2, null) as t(id, label)", "values (1, null), (2, 'null') as t(id, label)"),
            ("values ('a'), ('b') as t(label)", "values ('a], [b') as t(label)"),
            ("select named_struct('a', 'x,y', 'b', 'z') as s", "select named_struct('a', 'x', 'b', 'y,z') as s"),
            ("select array(null, null, 'c') as a", "select array(null, 'null', 'c') as a"),
            ("select 'null' as label", "select cast(null as string) as label"),
        ],
        ids=["rows", "null-or-'null'", "row-separators", "struct-literal", "array-literal", "string-literal"],
    )
    def test_inline_rows_and_literals_behind_a_view_are_part_of_the_digest(self, session, project, one, other):
        """The plan's text prints neither inline rows nor quotes: such views must still differ."""
        view = f"{project.test_schema}.lookup"
        session.sql(f"create or replace view {view} as {one if one.startswith('select') else 'select * from ' + one}")
        before = self.digest(session, f"select * from {view}")
        session.sql(
            f"create or replace view {view} as {other if other.startswith('select') else 'select * from ' + other}"
        )
        assert self.digest(session, f"select * from {view}") != before

    def test_the_time_zone_counts_also_when_only_the_jvm_sets_it(self, session):
        sql = "select cast(cast(id * 3600 as timestamp) as string) as at from range(2)"
        zones = session._jvm.java.util.TimeZone
        jvm_zone, set_zone = zones.getDefault(), session.conf.get("spark.sql.session.timeZone", None)
        session.conf.unset("spark.sql.session.timeZone")
        try:
            zones.setDefault(zones.getTimeZone("UTC"))
            in_utc = self.digest(session, sql)
            zones.setDefault(zones.getTimeZone("Asia/Tokyo"))
            assert self.digest(session, sql) != in_utc
        finally:
            zones.setDefault(jvm_zone)
            if set_zone is not None:
                session.conf.set("spark.sql.session.timeZone", set_zone)

    def test_settings_that_change_results_change_the_digest_and_the_adapters_own_do_not(self, session):
        sql = "select cast(timestamp'2026-01-01 00:00:00' as string) as at, id from range(3)"
        zone = session.conf.get("spark.sql.session.timeZone")
        before = self.digest(session, sql)
        try:
            session.conf.set("spark.sql.session.timeZone", "Asia/Tokyo" if zone != "Asia/Tokyo" else "UTC")
            assert self.digest(session, sql) != before
        finally:
            session.conf.set("spark.sql.session.timeZone", zone)
        saved = {name: session.conf.get(name, None) for name in ADAPTER_SETTINGS}
        try:
            session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")
            session.conf.set("spark.sql.legacy.bucketedTableScan.outputOrdering", "true")
            assert self.digest(session, sql) == before
        finally:
            for name, value in saved.items():
                session.conf.unset(name) if value is None else session.conf.set(name, value)

    @pytest.mark.parametrize(
        "sql, reason",
        [
            ("select id, rand() as r from range(3)", "nondeterministic"),
            ("select id from range(3) where id > cast(rand() * 0 as int) - 1", "nondeterministic"),
            ("select id, uuid() as u from range(3)", "nondeterministic"),
            ("select id, om_plus_one(id) as n from range(3)", "user-defined function"),
            ("select * from {schema}.cached", "InMemoryRelation"),
            ("select * from {schema}.missing", "could not plan"),
            ("select transform(id) using 'cat' as (x string) from range(2)", "runs code outside its plan"),
        ],
        ids=["rand", "rand-in-a-filter", "uuid", "python-udf", "cached-table", "analysis-error", "script"],
    )
    def test_no_digest_where_it_cannot_vouch_for_the_output(self, session, project, sql, reason):
        schema = project.test_schema
        session.udf.register("om_plus_one", lambda x: x + 1, "long")
        session.sql(f"create table if not exists {schema}.cached using parquet as select 1 as id")
        session.sql(f"cache table {schema}.cached")
        try:
            inputs = model_inputs(session, sql.format(schema=schema), ["model"])
        finally:
            session.sql(f"uncache table {schema}.cached")
        assert inputs.digest is None and reason in inputs.reason

    def test_a_file_written_moments_ago_gives_no_digest(self, session, csv_dir):
        """A store keeps times to the second (object stores) on a clock that is not the driver's:
        a file rewritten in place with the same size within that time would keep its time."""
        sql = f"select * from csv.`{csv_dir}`"
        self.digest(session, sql)
        (csv_dir / "part.csv").write_text("1,a\n2,d\n")
        inputs = model_inputs(session, sql, ["model"])
        assert inputs.digest is None and f"less than {SETTLED_SECONDS} s ago" in inputs.reason
        assert "part.csv" in inputs.reason

    def test_a_table_listed_earlier_in_the_session_is_listed_again(self, session, project, csv_dir):
        """Spark keeps a table's file listing for the session; a file rewritten in place since
        (same name, same size) must still change the digest, and the build must read it."""
        table = f"{project.test_schema}.csv_table"
        session.sql(f"create table {table} (id string, label string) using csv location '{csv_dir}'")
        sql = f"select * from {table}"
        before = self.digest(session, sql)
        assert session.sql(sql).count() == 2  # the listing is now kept by the session
        (csv_dir / "part.csv").write_text("1,a\n2,e\n")
        assert self.digest(session, sql) != before
        assert sorted(r.label for r in session.sql(sql).collect()) == ["a", "e"]
