select round(cast({{ dbrouter.cosine_similarity('[1, 0, 0]::float[3]', '[1, 1, 0]::float[3]') }} as double), 4) as c45,
    round(cast({{ dbrouter.cosine_similarity('[1, 2, 3]::float[3]', '[2, 4, 6]::float[3]') }} as double), 4) as c0
