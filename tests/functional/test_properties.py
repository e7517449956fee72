"""Property: for any sequence of model outputs (rows appearing, changing, vanishing, keys
changing, NULLs, a column coming and going), replaying everything published equals the last
output. Examples are few by default (each is several dbt runs); raise them with
`--hypothesis-profile thorough`."""

import pytest
from dbt.tests.util import run_dbt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.mirror import model_output, normalized, set_source, table_folder
from tests.support.mirror_oracle import replay

settings.register_profile(
    "default",
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile("default")

MODEL = """
{{ config(materialized='open_mirror', unique_key='id', max_rows_per_file=3) }}
select * from {{ target.schema }}.src
"""

rows = st.dictionaries(
    keys=st.integers(1, 8),
    values=st.tuples(st.sampled_from(["a", "b", "it's", None]), st.one_of(st.none(), st.integers(-3, 3))),
    max_size=7,
)
outputs = st.lists(st.tuples(rows, st.booleans()), min_size=1, max_size=3)


def source_sql(output, with_extra: bool) -> str:
    def literal(value):
        if value is None:
            return "null"
        return str(value) if isinstance(value, int) else "'" + value.replace("'", "\\'") + "'"

    values = ", ".join(f"({k}, {literal(n)}, {literal(a)})" for k, (n, a) in sorted(output.items()))
    extra = ", cast(id * 10 + coalesce(amount, 0) as bigint) as extra" if with_extra else ""
    select = f"select cast(id as int) as id, cast(name as string) as name, cast(amount as int) as amount{extra}"
    if not values:
        return f"{select} from values (0, null, null) as t(id, name, amount) where false"
    return f"{select} from values {values} as t(id, name, amount)"


class TestReplayEqualsLastOutput:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": MODEL}

    @given(sequence=outputs)
    def test_any_sequence_of_outputs(self, project, warehouse, landing_zone, sequence):
        schema = project.test_schema
        folder = table_folder(landing_zone, schema, "customers")
        for index, (output, with_extra) in enumerate(sequence):
            set_source(warehouse, schema, source_sql(output, with_extra))
            # Each example starts from a rebuilt table.
            run_dbt(["run", "--full-refresh"] if index == 0 else ["run"])
            expected = model_output(warehouse, f"select * from {schema}.src")
            columns = ["id", "name", "amount"] + (["extra"] if with_extra else [])
            mirrored = normalized([{c: row.get(c) for c in columns} for row in replay(folder)])
            assert mirrored == expected, f"after output {index + 1} of {sequence}"
