{#- Package mode: the hash diff's decisions in Jinja (the plugin makes them in Python, in
    hash_diff.py, with the same rules); the SQL is the shared macros/sql/hash_diff.sql. -#}

{#- The published non-key columns, in name order (reordering columns changes no hash). -#}
{%- macro openmirror_hashed_columns(specs, key_columns) -%}
  {%- set keys = key_columns | map('lower') | list -%}
  {%- set hashed = [] -%}
  {%- for spec in specs | sort(attribute='name') if spec.name | lower not in keys -%}
    {%- do hashed.append(spec) -%}
  {%- endfor -%}
  {{ return(hashed) }}
{%- endmacro -%}

{#- A power of two of about a million rows per bucket, at most 4096 (hash_diff.bucket_count). -#}
{%- macro openmirror_bucket_count(rows) -%}
  {%- set buckets = [1] -%}
  {%- for _ in range(12) -%}
    {%- if buckets[-1] * 1000000 < rows -%}{%- do buckets.append(buckets[-1] * 2) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(buckets[-1]) }}
{%- endmacro -%}

{#- Writer tasks: one per million change rows or per file's worth, at most 64 (hash_diff.writer_count). -#}
{%- macro openmirror_writer_count(rows, max_rows_per_file) -%}
  {%- set per_writer = [1000000, max_rows_per_file] | min if max_rows_per_file else 1000000 -%}
  {{ return([1, [64, (rows / per_writer) | round(0, 'ceil') | int] | min] | max) }}
{%- endmacro -%}

{%- macro openmirror_row_count(relation) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {{ return(run_query(om.openmirror_row_counts_sql([relation])).rows[0][0] | int) }}
{%- endmacro -%}

{#- The output's key hashes table (`rows` rows), stamped with the run and what its hashes cover. -#}
{%- macro openmirror_write_key_hashes(relation, rows, hashes, key_columns, hashed, run_id) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set stamp = om.openmirror_constants().properties -%}
  {%- do adapter.drop_relation(hashes) -%}
  {%- call statement('openmirror_key_hashes') -%}
    {{ om.openmirror_key_hashes_sql(hashes, relation, key_columns, hashed,
        {stamp.hashes_run_id: run_id, stamp.hashes_columns: om.openmirror_hash_signature(hashed)},
        om.openmirror_bucket_count(rows)) }}
  {%- endcall -%}
{%- endmacro -%}

{#- Whether the snapshot's key hashes (their table's properties; none: no table) can be trusted. -#}
{%- macro openmirror_hashes_match(hashes, snapshot_run, hashed) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set properties = none -%}
  {%- if load_cached_relation(hashes) is not none -%}
    {%- set properties = om.openmirror_table_properties(hashes) -%}
  {%- endif -%}
  {{ return(om.openmirror_hashes_usable(properties, snapshot_run, om.openmirror_hash_signature(hashed))) }}
{%- endmacro -%}

{#- The key hashes are usable when the run that wrote the snapshot wrote them too, over the same
    columns (hash_diff.hashes_usable). A run stopped between replacing the two leaves them behind:
    then not. -#}
{%- macro openmirror_hashes_usable(properties, snapshot_run, signature) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set keys = om.openmirror_constants().properties -%}
  {%- if properties is none or not snapshot_run -%}{{ return(false) }}{%- endif -%}
  {{ return(properties.get(keys.hashes_run_id) == snapshot_run and properties.get(keys.hashes_columns) == signature) }}
{%- endmacro -%}

{#- Runs one of the diff's queries, over key hashes tables with sorted bucket scans on (`sorted_buckets`,
    macros/sql/hash_diff.sql). They are off again before the caller can fail on the result: Jinja
    has no `finally`, so a failed key check must not leave them on for the invocation's later models. -#}
{%- macro openmirror_diff_query(sql, sorted_buckets) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- if not sorted_buckets -%}{{ return(run_query(sql)) }}{%- endif -%}
  {%- do run_query(om.openmirror_sorted_bucket_scans_sql(true)) -%}
  {%- set result = run_query(sql) -%}
  {%- do run_query(om.openmirror_sorted_bucket_scans_sql(false)) -%}
  {{ return(result) }}
{%- endmacro -%}

{#- After the output became the snapshot, its key hashes become the snapshot's. -#}
{%- macro openmirror_replace_key_hashes(new_hashes, previous_hashes, changes) -%}
  {%- do adapter.drop_relation(previous_hashes) -%}
  {%- do adapter.rename_relation(new_hashes, previous_hashes) -%}
  {%- do adapter.drop_relation(changes) -%}
{%- endmacro -%}
