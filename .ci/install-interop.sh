#!/usr/bin/env bash
# Install the TypeScript MCP SDK client that tests/interop/test_ts_client.py drives against
# `prove-gym serve`: `npm ci` in tests/interop/ts, exactly the versions of its package-lock.json,
# no install scripts. Needs node 20+ and npm; writes only tests/interop/ts/node_modules.
# Without it that test skips; PROVE_GYM_REQUIRE_INTEROP=1 makes its absence a failure.
set -euo pipefail
cd "$(dirname "$0")/../tests/interop/ts"

npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
node -e 'const p = require("./node_modules/@modelcontextprotocol/sdk/package.json"); console.log(`interop: node ${process.version}, @modelcontextprotocol/sdk ${p.version}`)'
