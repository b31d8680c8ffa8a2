{{ dbrouter.infer_join_edges(ref('it_columns_keyed')) }}
