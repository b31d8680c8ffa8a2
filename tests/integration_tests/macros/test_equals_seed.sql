{#- Generic test: the model's rows equal the rows of an expected seed (as multisets over the
    listed columns, compared as text), like dbt_utils.equality. Fails with one row per
    difference, tagged with the side it is missing from. -#}
{% test equals_seed(model, expected, columns) %}
with actual as (
    select {% for c in columns %}cast({{ c }} as varchar) as {{ c }}{% if not loop.last %}, {% endif %}{% endfor %}
    from {{ model }}
),
wanted as (
    select {% for c in columns %}cast({{ c }} as varchar) as {{ c }}{% if not loop.last %}, {% endif %}{% endfor %}
    from {{ expected }}
),
missing as (select * from wanted except all select * from actual),
unexpected as (select * from actual except all select * from wanted)
select 'missing from the model' as difference, * from missing
union all
select 'not expected', * from unexpected
{% endtest %}
