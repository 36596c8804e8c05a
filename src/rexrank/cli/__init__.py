"""`rexrank ...` command line. Each command group lives in its own module; heavy imports stay inside commands."""

from __future__ import annotations

import sys

import typer

from rexrank.errors import RexrankError

app = typer.Typer(name="rexrank", help="The ReXrank benchmark for chest X-ray report generation.",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)


_REGISTERED = False


def _register() -> None:
    global _REGISTERED
    if _REGISTERED:
        return
    _REGISTERED = True
    from rexrank.cli import data, evaluation, generate, hub, leaderboard, models

    app.add_typer(models.app, name="models", help="Download and inspect metric model weights.")
    app.add_typer(data.app, name="data", help="Prepare and verify the ReXrank test sets.")
    app.add_typer(leaderboard.app, name="leaderboard", help="The leaderboard store and Space.")
    app.add_typer(hub.app, name="hub", help="Publish metrics and results to the Hugging Face Hub.")
    evaluation.register(app)
    generate.register(app)


def main(argv: list[str] | None = None) -> int:
    _register()
    try:
        # With standalone_mode=False click returns a `typer.Exit(n)`'s code instead of exiting.
        code = app(args=argv, standalone_mode=False)
        return int(code or 0) if isinstance(code, int) else 0
    except RexrankError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        return 2
    except (typer.Exit, SystemExit) as exc:  # typer.Exit carries exit_code
        return int(getattr(exc, "exit_code", getattr(exc, "code", 0)) or 0)
    except typer.Abort:
        typer.secho("aborted", err=True)
        return 130
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        raise


def run() -> None:
    sys.exit(main())
