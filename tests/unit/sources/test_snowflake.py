"""type: snowflake - settings, secrets from the environment, bad entries."""


import pytest

from dbrouter.errors import SourceError, SourcesConfigError
from dbrouter.sources.config import load_sources
from dbrouter.sources.snowflake import connect_kwargs


def _sources(tmp_path, entry: str):
    (tmp_path / "s.yml").write_text(f"databases:\n  - {entry}\n")
    return load_sources(tmp_path / "s.yml")


def test_snowflake_source_settings_and_secret_from_the_named_variable(tmp_path):
    cfg = _sources(tmp_path, "{type: snowflake, id: sales, database: SALES, schemas: [PUBLIC], role: READER, "
                             "password_env: SALES_PW}")
    spec = cfg.databases[0]
    assert (spec.type, spec.id, dict(spec.snowflake)["schemas"]) == ("snowflake", "sales", ("PUBLIC",))
    env = {"SNOWFLAKE_ACCOUNT": "acme", "SNOWFLAKE_USER": "u", "SALES_PW": "s3cret", "SNOWFLAKE_PASSWORD": "other"}
    assert connect_kwargs(spec, env) == {"account": "acme", "user": "u", "role": "READER", "password": "s3cret",
                                         "database": "SALES"}
    with pytest.raises(SourceError, match="SALES_PW") as err:
        connect_kwargs(spec, {"SNOWFLAKE_ACCOUNT": "acme", "SNOWFLAKE_USER": "u", "SNOWFLAKE_PASSWORD": "other"})
    assert "other" not in str(err.value)


@pytest.mark.parametrize("entry, message", [
    ("{type: snowflake, id: s, database: D, password: hunter2}", "must not be written in the sources file"),
    ("{type: snowflake, id: s, database: D, private_key_passphrase: x}", "must not be written"),
    ("{type: snowflake, database: D}", "`id` must be a non-empty string"),
    ("{type: snowflake, id: s}", "`database` must be a non-empty string"),
    ("{type: snowflake, id: s, database: D, warehose: X}", "unknown Snowflake setting"),
    ("{type: snowflake, id: s, database: D, schemas: PUBLIC}", "`schemas` must be a list"),
])
def test_bad_snowflake_sources_name_the_problem(tmp_path, entry, message):
    with pytest.raises(SourcesConfigError, match=message) as err:
        _sources(tmp_path, entry)
    assert "hunter2" not in str(err.value)
