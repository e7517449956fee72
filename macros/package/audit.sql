{#-
  Package mode's write-audit-publish (publish='after_tests'): a held run is recorded `held` in
  the manifest, its output is `{{ this }}` for the tests and the published snapshot waits aside;
  at the end of the invocation (macros/hooks/publish_audited.sql) it becomes `staged` when the
  model's tests passed, and is discarded otherwise. The rules are audit.py's.
-#}

{#- A model's run id in an invocation: its staged folder's name. -#}
{%- macro openmirror_package_run_id(unique_id) -%}
  {{ return(invocation_id ~ '-' ~ local_md5(unique_id)[:8]) }}
{%- endmacro -%}

{%- macro openmirror_audit_hook_configured(nodes) -%}
  {%- for node in nodes.values() if node.resource_type == 'operation' and 'openmirror_publish_audited' in (node.raw_code or '') -%}
    {{ return(true) }}
  {%- endfor -%}
  {{ return(false) }}
{%- endmacro -%}

{#- Where a held run keeps the published snapshot and its key hashes meanwhile. -#}
{%- macro openmirror_audit_base(target) -%}
  {{ return({
      'snapshot': api.Relation.create(database=target.database, schema=target.schema,
                                      identifier=target.identifier ~ '__om_audit_base', type='table'),
      'hashes': api.Relation.create(database=target.database, schema=target.schema,
                                    identifier=target.identifier ~ '__om_audit_base_hashes', type='table'),
  }) }}
{%- endmacro -%}

{#- What this invocation selected, for openmirror_unaudited_reason: dbt retry leaves dbt's
    `selected_resources` unset (or as an earlier invocation of the process left it), so there it
    tells nothing. -#}
{%- macro openmirror_selection() -%}
  {{ return([] if flags.WHICH == 'retry' else selected_resources) }}
{%- endmacro -%}

{#- Why this invocation builds only part of the model's rows, so that its run checks them and
    publishes nothing; none when it builds them all. `--empty` builds no rows. `--sample` filters
    every input that has an `event_time` to its window (dbt's rule; Jinja's `flags` lacks the
    sample), and the rows outside it would be published as deletes. -#}
{%- macro openmirror_partial_output(depends_on, graph) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- if flags.EMPTY -%}{{ return('--empty') }}{%- endif -%}
  {%- set sampled = om.openmirror_sampled_upstream(depends_on, graph) if invocation_args_dict.get('sample') else [] -%}
  {{ return(('--sample filters ' ~ sampled | join(', ') ~ ', upstream of this model') if sampled else none) }}
{%- endmacro -%}

{#- The nodes upstream of the model (through any number of models) that a sample filters: those
    with an `event_time`. Any of them makes the output partial: directly, through an ephemeral
    model's SQL, or through a view or table this invocation builds from its sample (and which
    then holds the sample: an `open_mirror` model's first sampled run, too). -#}
{%- macro openmirror_sampled_upstream(depends_on, graph) -%}
  {%- set sampled, pending = [], depends_on | list -%}
  {#- `pending` grows as the loop goes: each node's own inputs are visited after it, once. -#}
  {%- for unique_id in pending -%}
    {%- set node = graph.nodes.get(unique_id) or graph.sources.get(unique_id) or {} -%}
    {%- if (node.config or {}).get('event_time') and node.name not in sampled -%}{%- do sampled.append(node.name) -%}{%- endif -%}
    {%- for upstream in (node.depends_on or {}).get('nodes') or [] if upstream not in pending -%}
      {%- do pending.append(upstream) -%}
    {%- endfor -%}
  {%- endfor -%}
  {{ return(sampled) }}
{%- endmacro -%}

{#- audit.unaudited_reason in Jinja (the same cases test both): why a held change could not be
    published in this invocation, known before the model runs; none when it could. -#}
{%- macro openmirror_unaudited_reason(publish, reports_only, model_id, nodes, selected) -%}
  {%- if publish != 'after_tests' or reports_only or model_id not in selected -%}{{ return(none) }}{%- endif -%}
  {%- set not_selected = [] -%}
  {%- for unique_id in nodes | sort -%}
    {%- set node = nodes[unique_id] -%}
    {%- if node.resource_type == 'test' and model_id in ((node.depends_on or {}).nodes or []) and unique_id not in selected -%}
      {%- do not_selected.append(unique_id) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if not not_selected -%}{{ return(none) }}{%- endif -%}
  {{ return("publish='after_tests' publishes a change only when its tests pass in the same invocation, and "
      ~ "this invocation does not run " ~ not_selected | join(', ') ~ " (dbt run selects none): nothing was "
      ~ "published, and the run reports what it would publish, as a dry run does. Select its tests with "
      ~ "the model (dbt build, without excluding them or narrowing --indirect-selection)") }}
{%- endmacro -%}

{#- {'publish': bool, 'reason': text}: audit.verdict in Jinja (the same cases test both). -#}
{%- macro openmirror_audit_verdict(model_id, nodes, results) -%}
  {%- set tests = [] -%}
  {%- for unique_id in nodes | sort -%}
    {%- set node = nodes[unique_id] -%}
    {%- if node.resource_type == 'test' and model_id in ((node.depends_on or {}).nodes or []) -%}
      {%- do tests.append(unique_id) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if not tests -%}{{ return({'publish': true, 'reason': 'the model has no tests'}) }}{%- endif -%}
  {%- set status = {} -%}
  {%- for result in results -%}{%- do status.update({result.node.unique_id: result.status | string}) -%}{%- endfor -%}
  {%- set failed, not_run = [], [] -%}
  {%- for test in tests -%}
    {%- if test not in status -%}{%- do not_run.append(test) -%}
    {%- elif status[test] not in ('pass', 'warn') -%}{%- do failed.append(test ~ ' (' ~ status[test] ~ ')') -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if failed -%}{{ return({'publish': false, 'reason': 'its tests did not pass: ' ~ failed | join(', ')}) }}{%- endif -%}
  {%- if not_run -%}
    {{ return({'publish': false, 'reason': 'its tests did not run in this invocation (' ~ not_run | join(', ') ~ '); run them with the model (dbt build, without excluding them)'}) }}
  {%- endif -%}
  {{ return({'publish': true, 'reason': 'its ' ~ tests | length ~ ' tests passed'}) }}
{%- endmacro -%}

{#- The snapshot and key hashes a held run was diffed against go back in place (on a first run
    there were none: the table goes, and the next run is a first publish again). -#}
{%- macro openmirror_restore_audit_base(target) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set aside = om.openmirror_audit_base(target) -%}
  {%- set hashes = api.Relation.create(database=target.database, schema=target.schema,
                                       identifier=target.identifier ~ '__om_hashes', type='table') -%}
  {%- for kept, saved in [(target, aside.snapshot), (hashes, aside.hashes)] -%}
    {%- do adapter.drop_relation(kept) -%}
    {%- if adapter.get_relation(saved.database, saved.schema, saved.identifier) is not none -%}
      {%- do adapter.rename_relation(saved, kept) -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro -%}

{#- At the end of the invocation: each run held in it is marked staged (published by the next
    `dbt-openmirror publish`) when its model's tests passed, and discarded otherwise. -#}
{%- macro openmirror_package_finish_audits(results) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set constants = om.openmirror_constants() -%}
  {%- set keys, states = constants.properties, constants.states -%}
  {%- for result in results if result.node.resource_type == 'model' and result.node.config.get('publish') == 'after_tests' -%}
    {%- set node = result.node -%}
    {%- set target = adapter.get_relation(node.database, node.schema, node.alias) -%}
    {%- set snapshot = om.openmirror_table_properties(target) -%}
    {%- set run_id = om.openmirror_package_run_id(node.unique_id) -%}
    {%- if snapshot.get(keys.held) == 'true' and snapshot.get(keys.staged_run_id) == run_id -%}
      {%- set decided = om.openmirror_audit_verdict(node.unique_id, graph.nodes, results) -%}
      {%- set where = snapshot.get(keys.table_folder) ~ ' (run ' ~ run_id ~ ')' -%}
      {%- if decided.publish and result.status == 'success' -%}
        {%- do om.openmirror_settle_runs(snapshot.get(keys.manifest), [run_id], states.staged, from_state=states.held) -%}
        {%- call statement('openmirror_release_held') -%}
          {{ om.openmirror_unset_properties_sql(target, [keys.held, keys.manifest]) }}
        {%- endcall -%}
        {%- set aside = om.openmirror_audit_base(target) -%}
        {%- do adapter.drop_relation(aside.snapshot) -%}
        {%- do adapter.drop_relation(aside.hashes) -%}
        {%- do log("Model '" ~ node.name ~ "': staged " ~ where ~ " for `dbt-openmirror publish`: " ~ decided.reason, info=True) -%}
      {%- else -%}
        {%- do om.openmirror_restore_audit_base(target) -%}
        {%- do om.openmirror_settle_runs(snapshot.get(keys.manifest), [run_id], states.discarded, from_state=states.held) -%}
        {%- do exceptions.warn("Model '" ~ node.name ~ "': not published, " ~ where ~ " discarded: "
            ~ (decided.reason if result.status == 'success' else 'the model did not finish')) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro -%}
