"""Relations under `type: openmirror`: the relation cache, aliases, changing a model's
materialization, dropping a schema."""

import pytest
from dbt.tests.adapter.aliases import fixtures as alias_fixtures
from dbt.tests.adapter.aliases.test_aliases import (
    BaseAliasErrors,
    BaseAliases,
    BaseSameAliasDifferentDatabases,
    BaseSameAliasDifferentSchemas,
)
from dbt.tests.adapter.caching.test_caching import (
    BaseCachingLowercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseCachingUppercaseModel,
    BaseNoPopulateCache,
)
from dbt.tests.adapter.relations.test_changing_relation_type import BaseChangeRelationTypeValidator
from dbt.tests.adapter.relations.test_dropping_schema_named import BaseDropSchemaNamed
from dbt.tests.util import run_dbt

# The alias suites' string_literal falls back to Postgres' `'...'::text`.
SPARK_STRING_LITERAL = """
{% macro spark__string_literal(s) %}
    cast('{{ s }}' as string)
{% endmacro %}
"""


class SparkAliasMacros:
    @pytest.fixture(scope="class")
    def macros(self):
        return {
            "cast.sql": alias_fixtures.MACROS__CAST_SQL + SPARK_STRING_LITERAL,
            "expect_value.sql": alias_fixtures.MACROS__EXPECT_VALUE_SQL,
        }


class SparkCacheCheck:
    """dbt's cache check compares database, schema and identifier of the cached relation after a
    first run (added by the materialization) and a second (read back from the metastore); Spark
    relations have no database, so this compares schema and identifier."""

    def run_and_inspect_cache(self, project, run_args=None):
        cached = []
        for _ in range(2):
            run_dbt(run_args)
            (relation,) = project.adapter.cache.relations
            cached.append((relation.schema.lower(), relation.identifier.lower()))
        assert cached[0][0] == project.test_schema.lower()
        assert cached[1] == cached[0]


class TestCachingLowercaseModel(SparkCacheCheck, BaseCachingLowercaseModel):
    pass


class TestCachingUppercaseModel(SparkCacheCheck, BaseCachingUppercaseModel):
    pass


class TestCachingSelectedSchemaOnly(SparkCacheCheck, BaseCachingSelectedSchemaOnly):
    pass


class TestNoPopulateCache(SparkCacheCheck, BaseNoPopulateCache):
    pass


class TestAliases(SparkAliasMacros, BaseAliases):
    pass


class TestAliasErrors(SparkAliasMacros, BaseAliasErrors):
    pass


@pytest.mark.adapter_suites
class TestSameAliasDifferentSchemas(SparkAliasMacros, BaseSameAliasDifferentSchemas):
    pass


@pytest.mark.skip(reason="Spark has one catalog level (database and schema are the same thing)")
class TestSameAliasDifferentDatabases(BaseSameAliasDifferentDatabases):
    pass


class TestChangeRelationType(BaseChangeRelationTypeValidator):
    pass


@pytest.mark.adapter_suites
class TestDropSchemaNamed(BaseDropSchemaNamed):
    pass
