from rexrank.cli import run

run()
