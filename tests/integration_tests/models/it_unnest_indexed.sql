with src as (select * from (values (1, ['a', 'b']), (2, cast([] as varchar[])), (3, null)) as t(id, arr))
{{ dbrouter.unnest_indexed('src', 'arr', ['id']) }}
