"""The warehouse folders of tables beside the catalog (run/folder_repair.py puts them back in
step after a run killed inside a statement), and their implementation over the in-process Spark
session's JVM. Over Thrift the warehouse is the server's, out of dbt's reach."""

from dataclasses import dataclass
from typing import Any, Protocol

from dbt.adapters.openmirror.errors import PublishError

#: File systems whose folder rename is one atomic step. Elsewhere (S3, GCS, blob storage without a
#: hierarchical namespace) a rename copies file by file, and one cut off halfway leaves both
#: folders partly filled: which files are whose cannot be told, and nothing is repaired.
ATOMIC_RENAMES = frozenset({"file", "hdfs", "abfs", "abfss"})


@dataclass(frozen=True)
class SchemaFolders:
    """A schema's folder (a qualified path), and the names of the folders in it."""

    location: str
    names: frozenset[str]

    def default(self, name: str) -> str:
        """Where the catalog puts a managed table of this name."""
        return f"{self.location.rstrip('/')}/{name}"


@dataclass(frozen=True)
class RegisteredTable:
    #: A qualified path, spelled as `SchemaFolders` spells them.
    folder: str
    managed: bool


class TableFolders(Protocol):
    """The folders of tables in the warehouse, read and changed beside the catalog."""

    def schema_folders(self, schema: str) -> SchemaFolders | None:
        """None: no such schema, or its folders cannot be repaired."""
        ...

    def registered(self, relation: Any) -> RegisteredTable | None: ...

    def exists(self, folder: str) -> bool: ...

    def move(self, folder: str, to: str, relation: Any) -> None: ...

    def remove(self, folder: str) -> None: ...


class SessionTableFolders:
    """The catalog and the warehouse's file system of the in-process Spark session, through its
    JVM."""

    def __init__(self, session: Any) -> None:
        self.jvm = session._jvm
        state = session._jsparkSession.sessionState()
        self.catalog = state.catalog()
        self.parser = state.sqlParser()
        self.hadoop_conf = state.newHadoopConf()

    def _path(self, folder: str) -> Any:
        return self.jvm.org.apache.hadoop.fs.Path(folder)

    def _file_system(self, path: Any) -> Any:
        return path.getFileSystem(self.hadoop_conf)

    def _qualified(self, location: Any) -> str:
        path = self._path(location)
        return str(self._file_system(path).makeQualified(path).toString())

    def _identifier(self, relation: Any) -> Any:
        return self.parser.parseTableIdentifier(f"{relation.schema}.{relation.identifier}")

    def schema_folders(self, schema: str) -> SchemaFolders | None:
        if not self.catalog.databaseExists(schema):
            return None
        location = self._qualified(self.catalog.getDatabaseMetadata(schema).locationUri())
        path = self._path(location)
        if path.toUri().getScheme() not in ATOMIC_RENAMES:
            return None
        file_system = self._file_system(path)
        if not file_system.exists(path):
            return SchemaFolders(location, frozenset())
        return SchemaFolders(
            location, frozenset(s.getPath().getName() for s in file_system.listStatus(path) if s.isDirectory())
        )

    def registered(self, relation: Any) -> RegisteredTable | None:
        identifier = self._identifier(relation)
        if not self.catalog.tableExists(identifier):
            return None
        table = self.catalog.getTableMetadata(identifier)
        location = table.storage().locationUri()
        if not location.isDefined():  # a view
            return None
        return RegisteredTable(self._qualified(location.get()), table.tableType().name() == "MANAGED")

    def exists(self, folder: str) -> bool:
        path = self._path(folder)
        return bool(self._file_system(path).exists(path))

    def move(self, folder: str, to: str, relation: Any) -> None:
        source, target = self._path(folder), self._path(to)
        if not self._file_system(source).rename(source, target):
            raise PublishError(f"could not move {folder} back to {to}, the folder of {relation}")
        # Spark caches a table's file listing: it is read again.
        self.catalog.refreshTable(self._identifier(relation))

    def remove(self, folder: str) -> None:
        path = self._path(folder)
        if not self._file_system(path).delete(path, True):
            raise PublishError(f"could not remove {folder}, which no table uses")
