{#- Coarse family of a column type ('number', 'text', 'time', 'boolean', 'other'), used to
    decide whether two columns may join. -#}
{% macro type_family(data_type) -%}
  {{ return(adapter.dispatch('type_family', 'dbrouter')(data_type)) }}
{%- endmacro %}

{% macro default__type_family(data_type) -%}
case
    when {{ data_type }} like '%bool%' then 'boolean'
    when {{ data_type }} like '%date%' or {{ data_type }} like '%time%' then 'time'
    when {{ data_type }} like '%int%' or {{ data_type }} like '%num%' or {{ data_type }} like '%dec%'
      or {{ data_type }} like '%real%' or {{ data_type }} like '%float%' or {{ data_type }} like '%double%'
      or {{ data_type }} like '%money%' then 'number'
    when {{ data_type }} like '%char%' or {{ data_type }} like '%text%' or {{ data_type }} like '%string%'
      or {{ data_type }} like '%clob%' or {{ data_type }} = '' then 'text'
    else 'other'
end
{%- endmacro %}
