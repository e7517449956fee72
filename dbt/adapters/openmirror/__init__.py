from dbt.adapters.base import AdapterPlugin
from dbt.include import openmirror

from dbt.adapters.openmirror.connections import OpenMirrorConnectionManager  # noqa: F401
from dbt.adapters.openmirror.credentials import OpenMirrorCredentials
from dbt.adapters.openmirror.impl import OpenMirrorAdapter
from dbt.adapters.openmirror.run.model_warnings import install as install_model_warnings

install_model_warnings()

Plugin = AdapterPlugin(
    adapter=OpenMirrorAdapter,  # type: ignore[arg-type]
    credentials=OpenMirrorCredentials,
    include_path=openmirror.PACKAGE_PATH,
    # Its dbt_project.yml's name: the package at the repository root is `dbt_openmirror`.
    project_name="dbt_openmirror_adapter",
    dependencies=["spark"],
)
