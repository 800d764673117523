#!/usr/bin/env bash
# Prints the path of the bin of the npm package
# @modelcontextprotocol/server-everything (the MCP reference server the
# gateway's tests use as a real third-party upstream over stdio),
# installing it once into .tools/mcp. Without npm it says what to install
# and fails; `make test` then fails, and the tests that need it skip with
# that message only when MCP_EVERYTHING is unset.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$root/.tools/mcp"
bin="$prefix/node_modules/.bin/mcp-server-everything"

if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
if ! command -v npm >/dev/null; then
	echo "mcp-everything.sh: npm is required for the MCP gateway's third-party upstream tests." >&2
	echo "mcp-everything.sh: install it with: sudo apt-get install npm" >&2
	exit 1
fi
echo "mcp-everything.sh: installing @modelcontextprotocol/server-everything into $prefix" >&2
npm install --silent --no-audit --no-fund --prefix "$prefix" @modelcontextprotocol/server-everything >&2
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
echo "mcp-everything.sh: the package installed no mcp-server-everything bin under $prefix" >&2
exit 1
