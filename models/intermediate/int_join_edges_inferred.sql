-- Implied join edges by the naming rules of the infer_join_edges macro (each edge records its
-- rule); declared edges are removed in int_join_edges_unioned.
{{ dbrouter.infer_join_edges(ref('int_columns_keyed')) }}
