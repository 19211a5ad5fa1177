#!/usr/bin/env bash
#
# Static analysis of the C code (the extension and the bench probes):
# cppcheck and clang-tidy (its configuration is .clang-tidy at the top).
# Exits non-zero on any finding.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"
ensure_packages cppcheck clang-tidy $(pg_packages)

server_inc=$("$PG_CONFIG_SYSTEM" --includedir-server)
cd "$here"

cppcheck --enable=warning,performance,portability --std=c99 \
	--error-exitcode=1 --inline-suppr --quiet \
	-I "$server_inc" --suppress=missingIncludeSystem \
	--suppress="*:$server_inc/*" -D__GNUC__ -DUSE_ASSERT_CHECKING \
	src/ bench/probe/
echo "cppcheck: clean"

# WarningsAsErrors makes clang-tidy exit non-zero on any finding
if ! out=$(clang-tidy --quiet src/*.c bench/probe/*.c -- -I"$server_inc" \
	-I"$(dirname "$server_inc")/internal" -D_GNU_SOURCE 2>&1); then
	grep -v "warnings generated" <<<"$out"
	exit 1
fi
echo "clang-tidy: clean"
