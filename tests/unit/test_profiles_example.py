"""profiles.example.yml: valid YAML whose connection secrets all come from the environment."""

from __future__ import annotations

import re

import yaml

from tests.conftest import ROOT

SECRETS = ("account", "user", "password", "private_key_path", "private_key_passphrase", "private_key", "token")


def _outputs() -> dict:
    return yaml.safe_load((ROOT / "profiles.example.yml").read_text())["dbrouter"]["outputs"]


def test_every_secret_is_an_env_var_reference():
    env_ref = re.compile(r"^\{\{ env_var\('[A-Z_]+'(, '[^']*')?\) \}\}$")
    found = 0
    for name, output in _outputs().items():
        for key in SECRETS:
            if key in output:
                found += 1
                assert env_ref.match(str(output[key])), f"{name}.{key} = {output[key]!r} is not env_var(...)"
                assert "''" not in str(output[key]) or key == "private_key_passphrase", f"{name}.{key} has a default"
    assert found >= 7


def test_snowflake_targets_for_password_and_key_pair_auth():
    outputs = _outputs()
    assert outputs["snowflake"]["type"] == "snowflake" and "password" in outputs["snowflake"]
    keypair = outputs["snowflake_keypair"]
    assert keypair["type"] == "snowflake" and "private_key_path" in keypair and "password" not in keypair


def test_duckdb_target_writes_where_dbrouter_build_says():
    assert _outputs()["duckdb"]["path"] == "{{ env_var('DBROUTER_WAREHOUSE') }}"


def test_duckdb_build_memory_is_bounded_and_settable():
    settings = _outputs()["duckdb"]["settings"]
    assert settings["memory_limit"] == "{{ env_var('DBROUTER_BUILD_MEMORY_LIMIT', '2.5GB') }}"
    # the profile's fallback is the settings table's default (docs/configuration.md): one value
    from dbrouter.settings import BY_NAME

    assert f"'{BY_NAME['DBROUTER_BUILD_MEMORY_LIMIT'].default}'" in settings["memory_limit"]


def test_duckdb_build_stores_vectors_without_float_compression():
    import duckdb

    setting = _outputs()["duckdb"]["settings"]["disabled_compression_methods"]
    con = duckdb.connect()
    con.execute(f"set disabled_compression_methods = '{setting}'")  # a value DuckDB accepts
    con.execute("create table t as select [random() for x in range(384)]::float[384] as v from range(5000)")
    con.execute("checkpoint")
    used = {r[0] for r in con.execute("select compression from pragma_storage_info('t')").fetchall()}
    assert not used & {"ALP", "ALPRD"}
