"""The ``basra-engine`` command: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from basra.service import config


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="basra-engine",
        description="Basra engine and gRPC service (ERAM and the rule systems of VARIANTS.md).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    plans = commands.add_parser(
        "plans", help="list the capture plans of a card on a floor (rules oracle)"
    )
    plans.add_argument("--floor", default="", help='floor cards, e.g. "4S 6H 10C 3D"')
    plans.add_argument("--card", help="the card played, e.g. 10H")
    plans.add_argument(
        "--batch", metavar="FILE", help='JSON lines {"floor": [...], "card": "..."} (- for stdin)'
    )
    plans.add_argument("--json", action="store_true", help="print one JSON object")
    plans.add_argument(
        "--rules", default="eram", metavar="NAME", help="rule system (default eram; see `rules`)"
    )

    rules = commands.add_parser("rules", help="list the rule systems (as ListRules does)")
    rules.add_argument("--json", action="store_true", help="print the ListRules JSON")

    serve = commands.add_parser("serve", help="run the gRPC service")
    config.add_arguments(serve)

    demo = commands.add_parser("demo", help="watch two bots play a match through the RPCs")
    demo.add_argument("--target", default="localhost:50051", help="server address HOST:PORT")
    demo.add_argument("--seed", type=int, help="match seed (the server must allow seeds)")
    demo.add_argument("--api-key", help="API key, when the server requires one")

    play = commands.add_parser("play", help="play a match in the terminal (against a bot)")
    play.add_argument("--target", default="localhost:50051", help="server address HOST:PORT")
    play.add_argument("--hot-seat", action="store_true", help="two people share the keyboard")
    play.add_argument("--seed", type=int, help="match seed (the server must allow seeds)")
    play.add_argument("--api-key", help="API key, when the server requires one")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "plans":
        from basra import oracle

        return oracle.main(args.floor, args.card, args.batch, args.json, args.rules)
    if args.command == "rules":
        from basra import oracle

        return oracle.rules_main(args.json)
    if args.command == "serve":
        from basra.service import server

        try:
            settings = config.from_args(args)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        server.serve(settings)
        return 0
    if args.command == "demo":
        from basra.client import demo

        return demo.run(args.target, sys.stdout, seed=args.seed, api_key=args.api_key)
    if args.command == "play":
        from basra.client import play

        return play.run(
            args.target, sys.stdout, hot_seat=args.hot_seat, seed=args.seed, api_key=args.api_key
        )
    raise AssertionError(args.command)  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
