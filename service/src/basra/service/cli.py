"""The ``basra-engine`` command: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from basra.service import config


class _Help(argparse.HelpFormatter):
    """Help that shows each option's default (when it has a meaningful one)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "(default" not in text
            and action.default not in (None, False, "", argparse.SUPPRESS)
            and action.option_strings
        ):
            text += " (default: %(default)s)"
        return text


def version() -> str:
    """The installed version: of the whole service's distribution (``pip install .``, the image)
    or, in a checkout set up by ``make``, of the service component."""
    for distribution in ("basra-engine", "basra-service"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"  # pragma: no cover - run from a source tree


def engine_kind() -> str:
    """Which engine this process runs: mypyc-compiled, or its .py sources (no C compiler when
    it was built, or BASRA_ENGINE=pure)."""
    from basra import engine

    return "compiled" if engine.COMPILED else "interpreted"


def _cards_flag(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--cards",
        choices=("symbols", "letters"),
        default=default,
        help="card notation shown: suit symbols (10♦ Q♠) or letters (10D QS)",
    )


def _client_flags(parser: argparse.ArgumentParser, target: str | None) -> None:
    parser.add_argument(
        "--target",
        default=target,
        help="server address HOST:PORT" + ("" if target else " (default: localhost:50051)"),
    )
    parser.add_argument(
        "--seed", type=int, help="match seed, to replay a match (the server must allow seeds)"
    )
    parser.add_argument("--api-key", help="API key, when the server requires one")
    parser.add_argument(
        "--rules",
        metavar="NAME",
        help="rule system of a new match (see `basra-engine rules`; default: eram)",
    )
    parser.add_argument(
        "--seats",
        type=int,
        default=0,
        help="seats of a new match, bots in the others (default: the rules' smallest)",
    )
    _cards_flag(parser, "symbols")


BOT_LEVELS = ("random", "greedy", "strong")
"""The levels of the server's bots (basra.v1.BotLevel), by name."""


def _levels(text: str) -> tuple[str, ...]:
    levels = tuple(level.strip() for level in text.split(","))
    if not levels or any(level not in BOT_LEVELS for level in levels):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give levels separated by commas, each one of {', '.join(BOT_LEVELS)}"
        )
    return levels


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="basra-engine",
        description="Basra engine and gRPC service (ERAM and the rule systems of VARIANTS.md).",
        formatter_class=_Help,
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {version()} (engine {engine_kind()})"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    plans = commands.add_parser(
        "plans",
        help="list the capture plans of a card on a floor (rules oracle)",
        description="List the capture plans of a card on a floor, as the engine offers them. "
        "Cards are written 10D, TD, 10d or 10♦; at most 12 plans are offered (RULES.md).",
        formatter_class=_Help,
    )
    plans.add_argument(
        "--floor", default="", help='floor cards, e.g. "4S 6H 10C 3D" (default: an empty floor)'
    )
    plans.add_argument("--card", help="the card played, e.g. 10H (required without --batch)")
    plans.add_argument(
        "--batch",
        metavar="FILE",
        help='answer JSON lines {"floor": [...] or "...", "card": "..."} from FILE (- for stdin)',
    )
    plans.add_argument("--json", action="store_true", help="print JSON (errors too)")
    _cards_flag(plans, "letters")
    plans.add_argument(
        "--rules", default="eram", metavar="NAME", help="rule system (see `basra-engine rules`)"
    )

    rules = commands.add_parser(
        "rules",
        help="list the rule systems (as ListRules does)",
        description="List every rule system the service plays, as its ListRules RPC does.",
        formatter_class=_Help,
    )
    rules.add_argument("--json", action="store_true", help="print the ListRules JSON")

    serve = commands.add_parser("serve", help="run the gRPC service")
    config.add_arguments(serve)

    demo = commands.add_parser(
        "demo",
        help="watch two bots play a match through the RPCs",
        description="Two bots play a whole match through basra.client, every play printed: the "
        "demo's own (greedy and random in turn), pausing --pace seconds between two plays, or "
        "with --levels the server's bots, which keep the server's pace: it waits before each of "
        "their moves (`basra-engine serve --bot-pace-seconds`; 0 plays at once).",
        formatter_class=_Help,
    )
    _client_flags(demo, "localhost:50051")
    demo.add_argument(
        "--levels",
        metavar="LEVEL,LEVEL",
        type=_levels,
        help="the server's bots play every seat, at these levels in turn (random, greedy, "
        "strong; e.g. strong,greedy), at the server's pace, and the demo watches (default: the "
        "demo plays greedy and random itself)",
    )
    demo.add_argument(
        "--pace",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="pause between two plays of the demo's own bots (default: 0, no pause); the "
        "server's bots (--levels) keep the server's pace, which --pace does not change",
    )

    play = commands.add_parser(
        "play",
        help="play a match in the terminal (against a bot)",
        description="Play a match in the terminal against the greedy bot, or with --hot-seat "
        "share the keyboard. A left match (q or Ctrl-C) is resumed with --resume: its seat "
        "tokens are kept in $XDG_STATE_HOME/basra-engine/MATCH_ID.json "
        "(~/.local/state/...), readable by you only, and removed when the match ends.",
        formatter_class=_Help,
    )
    _client_flags(play, None)
    play.add_argument("--hot-seat", action="store_true", help="players share the keyboard")
    play.add_argument("--resume", metavar="MATCH_ID", help="resume a match left earlier")
    play.add_argument(
        "--bot",
        choices=BOT_LEVELS,
        help="the server's bots play the other seats at this level (default: the terminal "
        "plays them greedily itself)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (130 after Ctrl-C in a client command)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "plans":
        from basra.service import oracle

        return oracle.main(
            args.floor,
            args.card,
            args.batch,
            args.json,
            symbols=args.cards == "symbols",
            rules=args.rules,
        )
    if args.command == "rules":
        from basra.service import oracle

        return oracle.rules_main(args.json)
    if args.command == "serve":
        from basra.service import server

        try:
            settings = config.from_args(args)
        except ValueError as exc:
            print(f"basra-engine serve: error: {exc}", file=sys.stderr)
            return 2
        try:
            server.serve(settings)
        except server.StartupError as exc:
            print(f"basra-engine serve: error: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "demo":
        from basra.client import demo

        if args.pace < 0:
            parser.error("demo: --pace must be 0 or more seconds")
        return demo.run(
            args.target,
            sys.stdout,
            seed=args.seed,
            api_key=args.api_key,
            pace=args.pace,
            symbols=args.cards == "symbols",
            rules=args.rules,
            seats=args.seats,
            levels=args.levels,
        )
    if args.command == "play":
        from basra.client import play

        if args.resume is not None and (
            args.seed is not None
            or args.hot_seat
            or args.rules is not None
            or args.seats
            or args.bot is not None
        ):
            parser.error(
                "play: --resume continues a match as it was: "
                "leave out --seed/--hot-seat/--rules/--seats/--bot"
            )
        return play.run(
            args.target,
            sys.stdout,
            hot_seat=args.hot_seat,
            seed=args.seed,
            api_key=args.api_key,
            symbols=args.cards == "symbols",
            resume=args.resume,
            rules=args.rules,
            seats=args.seats,
            bot=args.bot,
        )
    raise AssertionError(args.command)  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
