"""`rexrank ...` command line. Each command group lives in its own module; heavy imports stay inside commands.

Every usage error (unknown command or option, a missing or malformed value, a command or group run without its
required arguments) prints the usage line, a `--help` hint and one `error:` line, and exits 2; so does every
RexrankError, which commands raise for bad option values before any input is read or model loaded. No command
sets no_args_is_help (click >= 8.2 would print the whole help as an error): run bare, a group or a command that
needs arguments names what is missing (exit 2), alike on every typer/click version (tests/test_cli_usage.py walks
every command). `rexrank --help` prints the help.
"""

from __future__ import annotations

import sys

import typer

from rexrank.errors import RexrankError

# Plain (click-style) help, not typer's rich panels: typer 0.29's panel prints a type beside every flag (`--quiet
# <bool>`, even `--help <bool>`), as if it took a value; the plain formatter shows a flag by its names alone. Set here,
# it holds for every command and group. Help lines may be up to 120 columns where the terminal is that wide.
app = typer.Typer(name="rexrank", help="The ReXrank benchmark for chest X-ray report generation.",
                  pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None,
                  context_settings={"max_content_width": 120})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rexrank")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        from rexrank import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"rexrank {_version()}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print rexrank's version and exit.")) -> None:
    pass


_REGISTERED = False


def _register() -> None:
    global _REGISTERED
    if _REGISTERED:
        return
    _REGISTERED = True
    from rexrank.cli import data, evaluation, explore, generate, hub, leaderboard, meta_eval, models

    app.add_typer(models.app, name="models", help="Download and inspect metric model weights.")
    app.add_typer(data.app, name="data", help="Prepare and verify the ReXrank test sets.")
    app.add_typer(leaderboard.app, name="leaderboard", help="The leaderboard store and Space.")
    app.add_typer(hub.app, name="hub", help="Publish metrics and results to the Hugging Face Hub.")
    evaluation.register(app)
    generate.register(app)
    meta_eval.register(app)
    explore.register(app)


def main(argv: list[str] | None = None) -> int:
    _register()
    try:
        # With standalone_mode=False click returns a `typer.Exit(n)`'s code instead of exiting.
        code = app(args=argv, prog_name="rexrank", standalone_mode=False)  # the name usage lines show, however run
        return int(code or 0) if isinstance(code, int) else 0
    except RexrankError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        return 2
    except (typer.Exit, SystemExit) as exc:  # typer.Exit carries exit_code
        return int(getattr(exc, "exit_code", getattr(exc, "code", 0)) or 0)
    except typer.Abort:
        typer.secho("aborted", err=True)
        return 130
    except Exception as exc:
        if not _is_click_exception(exc):
            raise
        _show_click_error(exc)
        return int(getattr(exc, "exit_code", 2))


def _is_click_exception(exc: Exception) -> bool:
    # Recent typer (0.29) ships its own copy of click (typer._click, whose exceptions derive from typer's
    # TyperException, not from click's); older typer raises click's own. Matching the class name covers both.
    return any(cls.__name__ == "ClickException" for cls in type(exc).__mro__) and hasattr(exc, "format_message")


def _show_click_error(exc: Exception) -> None:
    """A usage error as usage line, help hint and one `error:` line; never the full help or a traceback."""
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        typer.echo(f"{ctx.get_usage()}\nTry '{ctx.command_path} --help' for help.", err=True)
    message = exc.format_message()
    commands = getattr(getattr(ctx, "command", None), "commands", None)
    if commands and getattr(exc, "exit_code", 2) == 2:  # a group: say what it offers
        message += f" Commands: {', '.join(sorted(commands))}."
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)


def run() -> None:
    sys.exit(main())
