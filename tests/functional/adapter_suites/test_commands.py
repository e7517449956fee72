"""dbt's commands beyond run and build under `type: openmirror`: show, debug, and `--empty`."""

import re

import pytest
from dbt.tests.adapter.dbt_debug.test_dbt_debug import BaseDebugPostgres
from dbt.tests.adapter.dbt_show.test_dbt_show import (
    BaseShowDoesNotHandleDoubleLimit,
    BaseShowLimit,
    BaseShowSqlHeader,
)
from dbt.tests.adapter.empty import _models as empty_models
from dbt.tests.adapter.empty.test_empty import (
    BaseTestEmpty,
    BaseTestEmptyInlineSourceRef,
    BaseTestEmptySeedFlag,
    MetadataWithEmptyFlag,
)
from dbt.tests.util import run_dbt
from dbt_common.exceptions import DbtRuntimeError

from tests.functional.adapter_suites.skip_reasons import DROP_COLUMN_NEEDS_DELTA

SEED_EMPTY_IS_NEWER = "`dbt seed --empty` came after dbt-core 1.11, which rejects the flag"


class TestShowLimit(BaseShowLimit):
    pass


class TestShowSqlHeader(BaseShowSqlHeader):
    pass


class TestShowDoesNotHandleDoubleLimit(BaseShowDoesNotHandleDoubleLimit):
    DATABASE_ERROR_MESSAGE = "[PARSE_SYNTAX_ERROR] Syntax error at or near 'limit'"

    def test_double_limit_throws_syntax_error(self, project):
        # The base test looks in pytest's shortened repr of the error, whose middle is cut: our
        # message names the exception class first, which moves Spark's text into the cut.
        with pytest.raises(DbtRuntimeError, match=re.escape(self.DATABASE_ERROR_MESSAGE)):
            run_dbt(["show", "--limit", "1", "--inline", "select 1 limit 1"])


class TestDebug(BaseDebugPostgres):
    """`dbt debug` against good and broken targets (the base class names its Postgres origin)."""

    @pytest.fixture(scope="class")
    def profiles_config_update(self, dbt_profile_target, unique_schema):
        return {
            "test": {
                "target": "default",
                "outputs": {
                    "default": {**dbt_profile_target, "schema": unique_schema},
                    # No landing zone: the profile itself is invalid.
                    "nopass": {"type": "openmirror", "method": "session", "schema": unique_schema},
                    # Nothing listens on port 1: the connection test fails.
                    "wronguser": {
                        "type": "openmirror",
                        "method": "thrift",
                        "host": "127.0.0.1",
                        "port": 1,
                        "schema": unique_schema,
                        "landing_zone": dbt_profile_target["landing_zone"],
                    },
                    "none_target": None,
                },
            }
        }


class TestEmptyFlag(BaseTestEmpty):
    pass


class TestEmptyInlineSourceRef(BaseTestEmptyInlineSourceRef):
    pass


# Under --empty a ref renders as a subquery; dbt-spark's macros that describe or alter the
# referenced relation cannot take one.
REF_IS_A_SUBQUERY = (
    "under --empty, ref() is a subquery, and dbt-spark runs `describe`/`alter table` on it, "
    "which Spark rejects as a syntax error"
)
METADATA_MODELS = {
    "control": empty_models.CONTROL,
    "get_columns_in_relation": empty_models.GET_COLUMNS_IN_RELATION,
    "alter_column_type": empty_models.ALTER_COLUMN_TYPE,
    "alter_relation_comment": empty_models.ALTER_RELATION_COMMENT,
    "alter_column_comment": empty_models.ALTER_COLUMN_COMMENT,
    "truncate_relation": empty_models.TRUNCATE_RELATION,
}


@pytest.mark.adapter_suites
class TestEmptyMetadata(MetadataWithEmptyFlag):
    """Metadata macros under `--empty`. The project leaves out alter_relation_add_remove_columns:
    dbt-spark refuses to drop a column from a non-Delta table already while parsing the model,
    which would fail the whole project."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"schema.yml": empty_models.SCHEMA} | {f"{name}.sql": sql for name, sql in METADATA_MODELS.items()}

    @pytest.mark.parametrize(
        "model",
        [
            "control",
            pytest.param("get_columns_in_relation", marks=pytest.mark.skip(reason=REF_IS_A_SUBQUERY)),
            pytest.param("alter_column_type", marks=pytest.mark.skip(reason=REF_IS_A_SUBQUERY)),
            "alter_relation_comment",
            "alter_column_comment",
            pytest.param(
                "alter_relation_add_remove_columns",
                marks=pytest.mark.skip(reason=DROP_COLUMN_NEEDS_DELTA),
            ),
            "truncate_relation",
        ],
    )
    def test_run(self, project, model):
        results = run_dbt(["run", "--empty", "--select", model])
        assert [(r.node.name, r.status) for r in results] == [(model, "success")]


# The base tests, skipped with their reasons.
class TestSeedEmptyFlag(BaseTestEmptySeedFlag):
    skip_newer = pytest.mark.skip(reason=SEED_EMPTY_IS_NEWER)
    test_seed_empty_creates_table_with_zero_rows = skip_newer(
        BaseTestEmptySeedFlag.test_seed_empty_creates_table_with_zero_rows
    )
    test_seed_empty_preserves_column_types = skip_newer(BaseTestEmptySeedFlag.test_seed_empty_preserves_column_types)
    test_build_empty_with_seed = pytest.mark.skip(reason="in dbt-core 1.11 `build --empty` still loads seeds in full")(
        BaseTestEmptySeedFlag.test_build_empty_with_seed
    )
