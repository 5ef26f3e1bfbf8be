"""What the ReFrame checks of reframe/ use to build, place, run and sanity-check: fixtures,
placed and prepared-case runs, the sweeps, storage and ping-pong checks, and the selection of
check files. The one part of the library that imports ReFrame; nothing else imports it."""
