"""Settings from flags and environment; tokens, hashes and sealed creation records."""

from __future__ import annotations

import argparse
import re
from dataclasses import fields

import grpc
import pytest

from basra.service import auth, config
from basra.service.config import ENVIRONMENT, Settings
from basra.service.errors import ServiceError


def parse(argv: list[str], environ: dict[str, str]) -> Settings:
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    return config.from_args(parser.parse_args(argv), environ)


def test_every_setting_has_a_flag_and_an_environment_variable() -> None:
    assert set(ENVIRONMENT) | set(config.CONSTANTS) == {f.name for f in fields(Settings)}
    assert not set(ENVIRONMENT) & set(config.CONSTANTS)
    flags = config.add_arguments(argparse.ArgumentParser())
    assert set(flags) == set(ENVIRONMENT)
    assert all(flags[name].dest == name for name in flags)


def test_request_timeout_has_one_meaning() -> None:
    """The request deadline and the wait of a response for its client are two values."""
    assert "request_timeout_s" in ENVIRONMENT
    assert "response_wait_s" in config.CONSTANTS


@pytest.mark.parametrize("constant", sorted(config.CONSTANTS))
def test_a_variable_named_like_a_constant_is_refused_not_ignored(constant: str) -> None:
    variable = config.constant_variable(constant)
    assert variable.startswith("BASRA_")
    assert variable not in ENVIRONMENT.values()
    with pytest.raises(ValueError, match=rf"^\${variable} is not a setting: the server holds"):
        parse(["--store", "embedded"], {variable: "1"})
    with pytest.raises(SystemExit):
        parse(["--store", "embedded", config.flag_name(constant), "1"], {})


@pytest.mark.parametrize("variable", sorted(config.REFUSED_VARIABLES))
def test_a_variable_that_sets_nothing_is_refused_with_why(variable: str) -> None:
    """A variable the server has no setting for, but which an operator may have set (a cap on
    requests per HTTP connection, which hyper does not need), stops the start with why instead
    of doing nothing."""
    assert variable not in ENVIRONMENT.values()
    why = config.REFUSED_VARIABLES[variable]
    with pytest.raises(ValueError, match=rf"^\${variable} is not a setting: {re.escape(why)}$"):
        parse(["--store", "embedded"], {variable: "1000"})
    assert parse(["--store", "embedded"], {}) == Settings(store="embedded")


def test_a_constant_out_of_range_is_refused_by_its_name() -> None:
    with pytest.raises(config.SettingError, match=r"^presence_ttl_s must be more than"):
        Settings(store="embedded", presence_interval_s=5, presence_ttl_s=5)


def test_defaults_environment_then_flags() -> None:
    assert parse(["--store", "embedded"], {}) == Settings(store="embedded")
    env = {
        "REDIS_URL": "rediss://:pw@redis:6380/0",
        "BASRA_MATCH_TTL_SECONDS": "60",
        "BASRA_ALLOW_SEEDS": "true",
        "BASRA_METRICS_PORT": "off",
        "BASRA_API_KEY": "k",
        "BASRA_CREATE_RATE": "2.5",
        "BASRA_REDIS_CLUSTER": "yes",
    }
    settings = parse([], env)
    assert settings.redis_url == "rediss://:pw@redis:6380/0"
    assert (settings.match_ttl_s, settings.allow_seeds, settings.metrics_port) == (60, True, None)
    assert (settings.api_key, settings.create_rate, settings.redis_cluster) == ("k", 2.5, True)
    overridden = parse(["--match-ttl-seconds", "30", "--no-allow-seeds", "--listen", ":1"], env)
    assert (overridden.match_ttl_s, overridden.allow_seeds, overridden.listen) == (30, False, ":1")
    # A flag whose value is "none" still wins over the environment.
    assert (
        parse(["--metrics-port", "off"], {**env, "BASRA_METRICS_PORT": "9100"}).metrics_port is None
    )


def test_secrets_are_kept_out_of_the_settings_repr() -> None:
    settings = parse([], {"REDIS_URL": "redis://:hunter2@r:6379/0", "BASRA_API_KEY": "topsecret"})
    assert "hunter2" not in repr(settings)
    assert "topsecret" not in repr(settings)


REDIS = {"REDIS_URL": "redis://r:6379/0"}


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        ([], {**REDIS, "BASRA_MATCH_TTL_SECONDS": "soon"}, "$BASRA_MATCH_TTL_SECONDS must be a"),
        ([], {**REDIS, "BASRA_ALLOW_SEEDS": "maybe"}, "$BASRA_ALLOW_SEEDS must be true or false"),
        ([], {"REDIS_URL": "http://x"}, "$REDIS_URL must start with redis://"),
        ([], {**REDIS, "BASRA_DRAIN_SECONDS": "-1"}, "$BASRA_DRAIN_SECONDS must be 0 or more"),
        (["--drain-seconds", "-1"], REDIS, "--drain-seconds must be 0 or more"),
        (["--create-burst", "0"], REDIS, "--create-burst must be positive"),
        # nan compares false with every bound and inf lifts them: neither is a setting.
        ([], {**REDIS, "BASRA_CREATE_RATE": "nan"}, "$BASRA_CREATE_RATE must be a finite"),
        ([], {**REDIS, "BASRA_CREATE_RATE": "inf"}, "$BASRA_CREATE_RATE must be a finite"),
        ([], {**REDIS, "BASRA_REQUEST_TIMEOUT_SECONDS": "NaN"}, "$BASRA_REQUEST_TIMEOUT_SECONDS"),
        ([], {**REDIS, "BASRA_DRAIN_SECONDS": "-inf"}, "$BASRA_DRAIN_SECONDS must be a finite"),
        ([], {**REDIS, "BASRA_LOG_LEVEL": "LOUD"}, "$BASRA_LOG_LEVEL must be DEBUG, INFO"),
        # An unknown loop is refused, not replaced by some default loop.
        ([], {**REDIS, "BASRA_EVENT_LOOP": "trio"}, "$BASRA_EVENT_LOOP must be uvloop or asyncio"),
        ([], {**REDIS, "BASRA_EVENT_LOOP": ""}, "$BASRA_EVENT_LOOP is set but empty"),
        # Fail closed: an empty secret is not "no secret", an empty URL is not "embedded".
        ([], {**REDIS, "BASRA_API_KEY": ""}, "$BASRA_API_KEY is set but empty"),
        ([], {**REDIS, "BASRA_API_KEY": "  "}, "$BASRA_API_KEY is set but empty"),
        ([], {"REDIS_URL": ""}, "$REDIS_URL is set but empty"),
        ([], {**REDIS, "BASRA_METRICS_PORT": ""}, "$BASRA_METRICS_PORT is set but empty"),
        ([], {}, "no store chosen: give --redis-url"),
        (["--store", "redis"], {}, "--store redis needs a Redis URL"),
        ([], {"BASRA_STORE": "redis"}, "$BASRA_STORE redis needs a Redis URL"),
        (["--store", "embedded"], REDIS, "--store embedded conflicts with the Redis URL"),
    ],
)
def test_bad_values_are_refused_naming_the_flag_or_variable_given(
    argv: list[str], environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        parse(argv, environ)
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_number_setting_built_in_code_must_be_finite(value: float) -> None:
    with pytest.raises(config.SettingError, match="--create-rate must be a finite number"):
        Settings(create_rate=value)


def test_the_embedded_store_is_asked_for_by_name() -> None:
    assert parse(["--store", "embedded"], {}).redis_url is None
    assert parse([], {"BASRA_STORE": "embedded"}).store == "embedded"
    assert parse([], REDIS).redis_url == REDIS["REDIS_URL"]
    assert parse(["--store", "redis"], REDIS).store == "redis"


def test_a_store_built_in_code_is_named_exactly() -> None:
    # The server picks its store by these names: "REDIS" without a URL would have served from
    # a private embedded store, "EMBEDDED" beside a URL from Redis, each passing every check.
    with pytest.raises(config.SettingError, match="--store must be embedded or redis"):
        Settings(store="REDIS")
    with pytest.raises(config.SettingError, match="--store must be embedded or redis"):
        Settings(store="EMBEDDED", redis_url=REDIS["REDIS_URL"])
    assert Settings(store="redis", redis_url=REDIS["REDIS_URL"]).store == "redis"


def test_the_event_loop_is_uvloop_unless_asyncio_is_asked_for() -> None:
    assert parse([], REDIS).event_loop == "uvloop"
    assert parse([], {**REDIS, "BASRA_EVENT_LOOP": "asyncio"}).event_loop == "asyncio"
    assert parse(["--event-loop", "ASYNCIO"], REDIS).event_loop == "asyncio"
    flag_wins = parse(["--event-loop", "uvloop"], {**REDIS, "BASRA_EVENT_LOOP": "asyncio"})
    assert flag_wins.event_loop == "uvloop"
    # Built in code (tests), the name must be exact: it chooses the loop.
    with pytest.raises(config.SettingError, match="--event-loop must be uvloop or asyncio"):
        Settings(event_loop="UVLOOP")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--metrics-port", "nine"], "argument --metrics-port: must be a port 0-65535 or 'off'"),
        (["--drain-seconds", "soon"], "argument --drain-seconds: must be a number, not 'soon'"),
        (["--api-key", ""], "argument --api-key: is set but empty"),
        (["--store", "disk"], "argument --store: must be embedded or redis"),
        (["--event-loop", "tokio"], "argument --event-loop: must be uvloop or asyncio"),
    ],
)
def test_flag_values_that_do_not_parse_are_one_line_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        parse(argv, {})
    assert info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith(f"error: {message}" + error.split(message, 1)[1]), error
    assert "Traceback" not in error


def test_every_flag_help_shows_its_default_and_variable() -> None:
    by_dest = config.add_arguments(argparse.ArgumentParser())
    for f in fields(Settings):
        if f.name in config.CONSTANTS:
            continue
        text = by_dest[f.name].help or ""
        assert f"(default: {config.shown(f.default)}; ${ENVIRONMENT[f.name]})" in text, f.name
    redis_help = by_dest["redis_url"].help or ""
    for scheme in config.REDIS_SCHEMES:
        assert scheme in redis_help


def test_tokens_are_long_random_and_stored_as_hashes() -> None:
    text, raw = auth.new_token()
    assert len(raw) == 32
    assert len(text) == 43
    assert auth.token_text(raw) == text
    assert auth.token_hash(text) != text.encode()
    assert len(auth.token_hash(text)) == 32
    hashes = [auth.token_hash(auth.new_token()[0]), auth.token_hash(text)]
    assert auth.seat_of(text, hashes) == 1
    with pytest.raises(ServiceError) as info:
        auth.seat_of("guess", hashes)
    assert (info.value.code, info.value.reason) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "TOKEN_INVALID",
    )


def test_bearer_token_parsing() -> None:
    assert auth.bearer_token([("Authorization", "bearer  abc ")]) == "abc"
    for metadata in ([], [("authorization", "Basic abc")], [("x-other", "Bearer abc")]):
        with pytest.raises(ServiceError) as info:
            auth.bearer_token(metadata)
        assert info.value.reason == "TOKEN_MISSING"


def test_sealed_tokens_open_only_with_their_request_id_and_unaltered() -> None:
    raws = [auth.new_token()[1], auth.new_token()[1]]
    sealed = auth.seal_tokens("request-0001-abcdef", raws)
    assert raws[0] not in sealed
    assert raws[1] not in sealed
    assert auth.open_tokens("request-0001-abcdef", sealed, 2) == raws
    with pytest.raises(ValueError, match="do not open"):
        auth.open_tokens("request-0002-abcdef", sealed, 2)
    tampered = bytes([sealed[0] ^ 1]) + sealed[1:]
    with pytest.raises(ValueError, match="do not open"):
        auth.open_tokens("request-0001-abcdef", tampered, 2)


def test_creating_request_ids_yield_stable_well_formed_match_ids() -> None:
    first = auth.match_id_for("f3b1c2d4-aaaa-bbbb-cccc-000000000001")
    assert first == auth.match_id_for("f3b1c2d4-aaaa-bbbb-cccc-000000000001")
    assert first != auth.match_id_for("f3b1c2d4-aaaa-bbbb-cccc-000000000002")
    assert auth.check_match_id(first) == first
    assert auth.check_match_id(auth.new_match_id())
