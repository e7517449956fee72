"""Start or stop a real Spark standalone cluster and Spark's Thrift JDBC/ODBC server on loopback,
from pyspark's own distribution: a master, one worker, and HiveThriftServer2 running its SQL on
the cluster, with one warehouse and one metastore.

    python scripts/spark_cluster.py start --dir /tmp/spark-cluster [--thrift-port 10000]
    python scripts/spark_cluster.py stop --dir /tmp/spark-cluster

`start` returns when the Thrift server accepts connections and prints the dbt-spark profile
fields to use (`method: thrift`). Each process runs in its own process group, recorded under
--dir, so `stop` ends them and everything they started.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
HOST = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _wait_for_port(port: int, timeout: float, processes) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, process in processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}; see its log")
        with socket.socket() as probe:
            if probe.connect_ex((HOST, port)) == 0:
                return
        time.sleep(1)
    raise TimeoutError(f"nothing listens on {HOST}:{port} after {timeout} s")


def _launch(name: str, command, workdir: Path, environment) -> subprocess.Popen:
    log = open(workdir / f"{name}.log", "w")
    return subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=environment, start_new_session=True
    )


def start(workdir: Path, thrift_port: int, worker_memory: str = "2g") -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    environment = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_LOG_DIR": str(workdir),
    }
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master_port, master_ui, worker_ui = _free_port(), _free_port(), _free_port()
    master_url = f"spark://{HOST}:{master_port}"
    processes = {}
    processes["master"] = _launch(
        "master",
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            HOST,
            "--port",
            str(master_port),
            "--webui-port",
            str(master_ui),
        ],
        workdir,
        environment,
    )
    _wait_for_port(master_port, 60, processes)
    processes["worker"] = _launch(
        "worker",
        [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            HOST,
            "--cores",
            "2",
            "--memory",
            worker_memory,
            "--webui-port",
            str(worker_ui),
            "--work-dir",
            str(workdir / "work"),
            master_url,
        ],
        workdir,
        environment,
    )
    warehouse, metastore = workdir / "warehouse", workdir / "metastore_db"
    processes["thrift"] = _launch(
        "thrift",
        [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            master_url,
            "--class",
            "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
            "--conf",
            f"spark.sql.warehouse.dir={warehouse}",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            "--conf",
            "spark.sql.session.timeZone=UTC",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            f"spark.driver.extraJavaOptions=-Dderby.system.home={workdir}",
            "--conf",
            "spark.executor.memory=1g",
            "--hiveconf",
            f"javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={metastore};create=true",
            "--hiveconf",
            f"hive.server2.thrift.port={thrift_port}",
            "--hiveconf",
            f"hive.server2.thrift.bind.host={HOST}",
            "spark-internal",
        ],
        workdir,
        environment,
    )
    (workdir / "processes.json").write_text(json.dumps({n: p.pid for n, p in processes.items()}))
    try:
        _wait_for_port(thrift_port, 180, processes)
    except Exception:
        stop(workdir)
        raise
    return {"method": "thrift", "host": HOST, "port": thrift_port, "master": master_url}


def _group_gone(pid: int) -> bool:
    # A child that exited stays a group member (a zombie) until it is reaped.
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def stop(workdir: Path) -> None:
    record = workdir / "processes.json"
    if not record.exists():
        return
    pids = [pid for pid in json.loads(record.read_text()).values() if pid is not None]
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 15
    while not all(_group_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in pids:
        if not _group_gone(pid):
            os.killpg(pid, signal.SIGKILL)
    record.unlink()


def main() -> int:
    arguments = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_argument("action", choices=["start", "stop"])
    arguments.add_argument("--dir", type=Path, required=True)
    arguments.add_argument("--thrift-port", type=int, default=10000)
    args = arguments.parse_args()
    if args.action == "start":
        print(json.dumps(start(args.dir.resolve(), args.thrift_port)))
    else:
        stop(args.dir.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
