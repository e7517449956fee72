from dbt.adapters.base import AdapterPlugin

from dbt.adapters.openmirror.connections import OpenMirrorConnectionManager  # noqa: F401
from dbt.adapters.openmirror.credentials import OpenMirrorCredentials
from dbt.adapters.openmirror.impl import OpenMirrorAdapter
from dbt.include import openmirror

Plugin = AdapterPlugin(
    adapter=OpenMirrorAdapter,  # type: ignore[arg-type]
    credentials=OpenMirrorCredentials,
    include_path=openmirror.PACKAGE_PATH,
    dependencies=["spark"],
)
