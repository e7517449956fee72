{#-
  Package mode (a stock Spark or Databricks connection, no dbt-openmirror plugin): the model's
  settings, checked in Jinja because nothing else runs on the dbt side. The plugin checks the same
  settings in Python (config.py); `dbt-openmirror publish` checks the table folder names again
  before it writes anything. Both modes' materializations call openmirror_check_vars,
  openmirror_log_full_refresh_overridden and openmirror_check_internal_names (only Jinja has the
  vars, the flags and the graph at hand).
-#}

{%- macro openmirror_fail(message) -%}
  {%- do exceptions.raise_compiler_error("Model '" ~ model.name ~ "': " ~ message) -%}
{%- endmacro -%}

{#- config.py's _choice; the choices are config.py's (openmirror_constants). -#}
{%- macro openmirror_choice(name) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set choices = om.openmirror_constants().choices[name] -%}
  {%- set value = config.get(name) -%}
  {%- set value = choices[0] if value is none else value -%}
  {%- if value not in choices -%}
    {%- do om.openmirror_fail(name ~ "='" ~ value ~ "' is not one of " ~ choices | join(', ')) -%}
  {%- endif -%}
  {{ return(value) }}
{%- endmacro -%}

{#- Names that become landing-zone folders: landing_zone.folder_name_problem in Jinja (the same
    cases test both, messages included). -#}
{%- macro openmirror_folder_name_problem(value) -%}
  {%- set rules = (dbt_openmirror if dbt_openmirror is defined else dbt).openmirror_constants().folder_names -%}
  {%- if value is not string -%}{{ return("it is not text (quote it in YAML)") }}{%- endif -%}
  {%- if not value -%}{{ return("it is empty") }}{%- endif -%}
  {%- if value in ('.', '..') -%}{{ return("it would leave its parent folder") }}{%- endif -%}
  {%- if value[0] in '_.' -%}{{ return("names starting with '_' or '.' are ignored by the mirror") }}{%- endif -%}
  {%- if value != value.strip() or value.endswith('.') -%}
    {{ return("it starts or ends with a space, or ends with '.'") }}
  {%- endif -%}
  {%- if value | length > rules.max_length -%}{{ return("it is longer than " ~ rules.max_length ~ " characters") }}{%- endif -%}
  {%- if value.encode('utf-8') | length > rules.max_bytes -%}
    {{ return("it is longer than " ~ rules.max_bytes ~ " bytes in UTF-8 (file systems take 255 bytes a folder name, "
        ~ "and a schema folder adds '" ~ rules.schema_suffix ~ "')") }}
  {%- endif -%}
  {%- set bad = modules.re.findall(rules.forbidden, value) | unique(case_sensitive=true) | sort(case_sensitive=true) | list -%}
  {%- if bad -%}
    {%- set shown = [] -%}
    {%- for character in bad -%}{%- do shown.append("%r" | format(character)) -%}{%- endfor -%}
    {{ return("it contains " ~ shown | join(', ') ~ (": whatever percent-decodes the name would read another folder "
        ~ "('%2E%2E' is '..')" if '%' in bad else '')) }}
  {%- endif -%}
  {%- if value.lower().endswith(rules.schema_suffix) -%}
    {{ return("it ends with '" ~ rules.schema_suffix ~ "', which marks schema folders") }}
  {%- endif -%}
  {{ return(none) }}
{%- endmacro -%}

{#- config.py's _folder_name: `value` of `setting`, or, with `default_from`, the schema or alias it defaults to. -#}
{%- macro openmirror_folder_name(setting, value, default_from=none) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set problem = om.openmirror_folder_name_problem(value) -%}
  {%- if problem -%}
    {%- set named = setting ~ "=" ~ "%r" | format(value) if default_from is none
        else "the " ~ default_from ~ " " ~ "%r" | format(value) ~ " (" ~ setting ~ "'s default)" -%}
    {%- set advice = "" if default_from is none else "; set " ~ setting ~ " to name the folder" -%}
    {%- do om.openmirror_fail(named ~ " cannot name a landing-zone folder: " ~ problem ~ advice) -%}
  {%- endif -%}
  {{ return(value) }}
{%- endmacro -%}

{#- config.file_format_problem in Jinja (the same cases test both). -#}
{%- macro openmirror_file_format_problem(value) -%}
  {%- set why = (dbt_openmirror if dbt_openmirror is defined else dbt).openmirror_constants().unfit_file_formats.get(value.strip().lower()) if value is string else none -%}
  {%- if why is not none -%}
    {{ return("file_format='" ~ value ~ "' " ~ why ~ ", and {{ this }} is the record of what was published: use parquet or delta") }}
  {%- endif -%}
  {{ return(none) }}
{%- endmacro -%}

{#- config.location_root_problem in Jinja (the same cases test both). -#}
{%- macro openmirror_location_root_problem(value) -%}
  {%- if value is not none -%}
    {{ return("location_root='" ~ value ~ "' is not supported: dbt-spark places every table a run builds at "
        ~ "<location_root>/<alias>, so the tables an open_mirror run builds beside {{ this }} would be written "
        ~ "over it. Leave it unset (the tables are kept in the schema's location)") }}
  {%- endif -%}
  {{ return(none) }}
{%- endmacro -%}

{%- macro openmirror_package_settings() -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {#- config.py's _relation_name: Spark's catalog lower-cases the names dbt's cache keeps as given. -#}
  {%- if this.schema != this.schema | lower or this.identifier != this.identifier | lower -%}
    {%- do om.openmirror_fail("Spark's catalog names the relation " ~ this.schema ~ "." ~ this.identifier
        ~ " in lower case (" ~ this.schema | lower ~ "." ~ this.identifier | lower ~ "), and dbt cannot track it "
        ~ "under both spellings. Spell the schema and alias in lower case; mirror_schema and mirror_table "
        ~ "name the landing-zone folders in any case.") -%}
  {%- endif -%}
  {%- set plain = om.openmirror_constants().names.plain_relation_name -%}
  {%- if not (modules.re.fullmatch(plain, this.schema, modules.re.IGNORECASE)
              and modules.re.fullmatch(plain, this.identifier, modules.re.IGNORECASE)) -%}
    {%- do om.openmirror_fail("Spark's SQL reads the relation name " ~ this.schema ~ "." ~ this.identifier
        ~ " only quoted, and dbt-spark does not quote it. Spell the schema and alias with letters a-z, digits and "
        ~ "underscores; mirror_schema and mirror_table name the landing-zone folders with other characters.") -%}
  {%- endif -%}
  {%- set longest = om.openmirror_constants().names.max_identifier_length -%}
  {%- if this.identifier | length > longest -%}
    {%- do om.openmirror_fail("the alias " ~ this.identifier ~ " has " ~ this.identifier | length ~ " characters, and the "
        ~ "tables a run builds beside it add up to " ~ (255 - longest) ~ " more, past the 255 a table's folder name can "
        ~ "have. Use an alias of at most " ~ longest ~ " characters; mirror_table names the landing-zone folder.") -%}
  {%- endif -%}
  {#- config.py's _config_names: dbt keeps any config key, so a misspelt one would be ignored. -#}
  {%- for name in model.unrendered_config | sort(case_sensitive=true) -%}
    {%- set meant = om.openmirror_near_miss(name, om.openmirror_constants().names.configs) -%}
    {%- if meant is not none -%}
      {%- do om.openmirror_fail("config '" ~ name ~ "' is not an open_mirror config, and would be ignored; "
          ~ "did you mean '" ~ meant ~ "'?") -%}
    {%- endif -%}
  {%- endfor -%}

  {%- set table_problem = om.openmirror_file_format_problem(config.get('file_format'))
      or om.openmirror_location_root_problem(config.get('location_root')) -%}
  {%- if table_problem -%}{%- do om.openmirror_fail(table_problem) -%}{%- endif -%}
  {%- set unique_key = config.get('unique_key') -%}
  {%- set keys = [unique_key] if unique_key is string else unique_key -%}
  {%- if not keys or keys is string or keys is mapping or keys is not iterable -%}
    {%- do om.openmirror_fail("materialized='open_mirror' needs a unique_key (a column name or a list of "
        ~ "them), because the mirror applies updates and deletes by key") -%}
  {%- endif -%}
  {#- Column names are taken as written: ` id` and `id` are two columns. -#}
  {%- set cleaned = [] -%}
  {%- for key in keys -%}
    {%- if key is not string or not key.strip() -%}
      {%- do om.openmirror_fail("unique_key entry " ~ tojson(key) ~ " is not a column name") -%}
    {%- endif -%}
    {%- if key | lower in cleaned | map('lower') | list -%}
      {%- do om.openmirror_fail("unique_key repeats " ~ tojson(key)) -%}
    {%- endif -%}
    {%- do cleaned.append(key) -%}
  {%- endfor -%}


  {%- set landing_zone = config.get('landing_zone') -%}
  {%- set landing_zone = var('openmirror_landing_zone', none) if landing_zone is none else landing_zone -%}
  {%- if landing_zone is not string or not landing_zone.strip() -%}
    {%- do om.openmirror_fail("package mode needs the landing zone as Spark writes it (got " ~ tojson(landing_zone)
        ~ "): set the var 'openmirror_landing_zone' (or the model config 'landing_zone'), e.g. "
        ~ "abfss://<workspace>@onelake.dfs.fabric.microsoft.com/<item>/Files/LandingZone") -%}
  {%- endif -%}
  {%- set manifest_schema = var('openmirror_manifest_schema', this.schema) -%}
  {%- if manifest_schema is not string or not manifest_schema.strip() -%}
    {%- do om.openmirror_fail("--vars openmirror_manifest_schema must name a schema, got " ~ tojson(manifest_schema)) -%}
  {%- endif -%}

  {#- config.py's _folder_setting: a config is its default only when it is not set; '' and false are refused
      (mirror_schema='' is the mirror's default schema). -#}
  {%- set mirror_schema = config.get('mirror_schema') -%}
  {%- if mirror_schema is none -%}
    {%- set mirror_schema = om.openmirror_folder_name('mirror_schema', this.schema, 'schema') -%}
  {%- elif mirror_schema != '' -%}
    {%- do om.openmirror_folder_name('mirror_schema', mirror_schema) -%}
  {%- endif -%}
  {%- set mirror_table = config.get('mirror_table') -%}
  {%- set mirror_table = om.openmirror_folder_name('mirror_table', this.identifier, 'alias') if mirror_table is none
      else om.openmirror_folder_name('mirror_table', mirror_table) -%}

  {#- config.py's _whole_number: a YAML true is not 1, nor 2.5 a number of rows. -#}
  {%- set max_rows_per_file = config.get('max_rows_per_file') -%}
  {%- set max_rows_per_file = 0 if max_rows_per_file is none else max_rows_per_file -%}
  {%- if max_rows_per_file is not integer or max_rows_per_file < 0 -%}
    {%- do om.openmirror_fail("max_rows_per_file must be a whole number of at least 0, got " ~ tojson(max_rows_per_file)) -%}
  {%- endif -%}
  {%- set show_key_values = config.get('show_key_values') -%}
  {%- set show_key_values = true if show_key_values is none else show_key_values -%}
  {%- if show_key_values is not boolean -%}
    {%- do om.openmirror_fail("show_key_values must be true or false, got " ~ tojson(show_key_values)) -%}
  {%- endif -%}
  {#- Incremental open_mirror models need the plugin (planning/candidates.py). -#}
  {%- for name in ['delete_flag', 'reconcile_every'] -%}
    {%- if config.get(name) is not none -%}
      {%- do om.openmirror_fail(name ~ " is not offered in package mode (incremental open_mirror models "
          ~ "need the plugin, `type: openmirror`); package mode runs every model in full") -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set on_schema_change = om.openmirror_constants().choices.on_schema_change[0] -%}
  {%- if 'on_schema_change' in model.unrendered_config -%}
    {%- if config.get('on_schema_change') == 'ignore' -%}
      {%- do om.openmirror_fail("on_schema_change='ignore' is not offered in package mode (its snapshot keeps "
          ~ "every column the model returns); use 'append_new_columns', 'fail' or 'sync_all_columns'") -%}
    {%- endif -%}
    {%- set on_schema_change = om.openmirror_choice('on_schema_change') -%}
  {%- endif -%}

  {{ return({
      'unique_key': cleaned,
      'landing_zone': landing_zone.rstrip('/'),
      'table_folder': (mirror_schema ~ om.openmirror_constants().folder_names.schema_suffix ~ '/' ~ mirror_table) if mirror_schema else mirror_table,
      'parquet_compression': om.openmirror_choice('parquet_compression'),
      'change_markers': om.openmirror_choice('change_markers'),
      'row_marker_position': om.openmirror_choice('row_marker_position'),
      'max_rows_per_file': max_rows_per_file,
      'show_key_values': show_key_values,
      'publish': om.openmirror_choice('publish'),
      'on_schema_change': on_schema_change,
      'manifest_schema': manifest_schema,
      'key_hashes': om.openmirror_var_flag('openmirror_key_hashes', var('openmirror_key_hashes', true)),
  }) }}
{%- endmacro -%}

{#- A var that switches something on or off (`--vars '{openmirror_dry_run: true}'`); anything
    else is refused: config.var_flag. -#}
{%- macro openmirror_var_flag(name, value) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- if value is sameas true or value is sameas false -%}{{ return(value) }}{%- endif -%}
  {%- set words = om.openmirror_constants().flag_words -%}
  {%- set word = (value | string | trim | lower) if (value is string or value is integer) else none -%}
  {%- if word in words.true or word in words.false -%}
    {{ return(word in words.true) }}
  {%- endif -%}
  {{ exceptions.raise_compiler_error("--vars " ~ name ~ " must be true or false, got " ~ tojson(value)) }}
{%- endmacro -%}

{#- config.py's spelling, edit_distance, closest_name and near_miss: a name meant as a known one. -#}
{%- macro openmirror_spelling(name) -%}
  {{ return(modules.re.sub('[\\s_-]', '', name | string | lower)) }}
{%- endmacro -%}

{%- macro openmirror_edit_distance(first, second) -%}
  {%- set state = namespace(previous=range(second | length + 1) | list) -%}
  {%- for letter in first -%}
    {%- set current = [loop.index] -%}
    {%- for other in second -%}
      {%- do current.append([state.previous[loop.index] + 1, current[loop.index0] + 1,
          state.previous[loop.index0] + (0 if letter == other else 1)] | min) -%}
    {%- endfor -%}
    {%- set state.previous = current -%}
  {%- endfor -%}
  {{ return(state.previous[-1]) }}
{%- endmacro -%}

{%- macro openmirror_closest_name(name, known) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set distances = [] -%}
  {%- for candidate in known -%}
    {%- do distances.append(om.openmirror_edit_distance(om.openmirror_spelling(name), om.openmirror_spelling(candidate))) -%}
  {%- endfor -%}
  {%- set nearest = distances.index(distances | min) -%}
  {{ return([known[nearest], distances[nearest]]) }}
{%- endmacro -%}

{%- macro openmirror_near_miss(name, known) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set length = om.openmirror_spelling(name) | length -%}
  {%- set candidates = [] -%}
  {%- for known_name in known if (om.openmirror_spelling(known_name) | length - length) | abs <= 2 -%}
    {%- do candidates.append(known_name) -%}
  {%- endfor -%}
  {%- if name in known or not candidates -%}{{ return(none) }}{%- endif -%}
  {%- set closest, distance = om.openmirror_closest_name(name, candidates) -%}
  {%- set allowed = 2 if om.openmirror_spelling(closest) | length >= om.openmirror_constants().names.long_name else 1 -%}
  {{ return(closest if distance <= allowed else none) }}
{%- endmacro -%}

{#- `full_refresh: false` in a model's config overrides `--full-refresh` (dbt's rule), which the
    refusals of a changed key or type advise: said, so that the advice is not followed in vain
    (in the log, not as a warning: `--warn-error` would fail the runs it protects). -#}
{%- macro openmirror_log_full_refresh_overridden() -%}
  {%- if flags.FULL_REFRESH and config.get('full_refresh') == false -%}
    {{ log("Model '" ~ model.name ~ "': full_refresh: false in its config overrides --full-refresh, "
        ~ "so this run is not a full refresh; remove it (or set it true) for one run to rebuild the mirrored table.",
        info=True) }}
  {%- endif -%}
{%- endmacro -%}

{#- A var named like ours but none of them (`openmirror_dryrun`, `OPENMIRROR_DRY_RUN`) would be
    ignored: a dry run asked for would publish. Only the vars given with --vars can be listed in
    Jinja (dbt_project.yml's cannot). -#}
{%- macro openmirror_check_vars() -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set names = om.openmirror_constants().names -%}
  {%- set given = invocation_args_dict.get('vars') -%}
  {%- for name in (given.keys() | map('string') | sort(case_sensitive=true) if given is mapping else []) -%}
    {%- if name not in names.vars and (om.openmirror_spelling(name).startswith(names.var_prefix)
          or om.openmirror_near_miss(name, names.vars) is not none) -%}
      {%- do om.openmirror_fail("--vars " ~ tojson(name) ~ " is not a dbt-openmirror var, and would be ignored; did you mean "
          ~ om.openmirror_closest_name(name, names.vars)[0] ~ "? (the vars are " ~ names.vars | join(', ')
          ~ "). Nothing was written.") -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro -%}

{#- A model, seed or snapshot named like a table this model's runs keep beside `{{ this }}`
    (`<this>__om_hashes`, `<this>__om_base`, ...) would be overwritten by them. -#}
{%- macro openmirror_check_internal_names(nodes) -%}
  {%- set om = dbt_openmirror if dbt_openmirror is defined else dbt -%}
  {%- set own = om.openmirror_constants().names.own_relations -%}
  {%- set prefix, backup = (this.identifier ~ own.prefix) | lower, (this.identifier ~ own.backup) | lower -%}
  {%- for node in nodes.values() | sort(attribute='unique_id')
        if node.unique_id != model.unique_id and node.resource_type in ('model', 'seed', 'snapshot')
        and node.config.materialized != 'ephemeral'
        and node.schema | lower == this.schema | lower and (node.database or '') | lower == (this.database or '') | lower -%}
    {%- set identifier = node.alias or node.name -%}
    {%- if (identifier | lower).startswith(prefix) or identifier | lower == backup -%}
      {%- do om.openmirror_fail(node.resource_type ~ " '" ~ node.name ~ "' (" ~ node.schema ~ "." ~ identifier
          ~ ") is named like a table this model's runs keep beside " ~ this.schema ~ "." ~ this.identifier ~ " ("
          ~ this.identifier ~ own.prefix ~ "*, " ~ this.identifier ~ own.backup ~ "), which they would overwrite; "
          ~ "rename one of them (its alias). Nothing was written.") -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro -%}
