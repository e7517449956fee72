from dbt.adapters.spark.connections import SparkConnectionManager


class OpenMirrorConnectionManager(SparkConnectionManager):
    TYPE = "openmirror"
