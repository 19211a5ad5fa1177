#!/usr/bin/env bash
#
# Static analysis of the C code (the extension and the bench probes):
# cppcheck and clang-tidy (its configuration is .clang-tidy at the top).
# First, one version number: META.json and debian/changelog must carry
# ordering.control's default_version.  Exits non-zero on any finding.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"
ensure_packages cppcheck clang-tidy $(pg_packages)

server_inc=$("$PG_CONFIG_SYSTEM" --includedir-server)
cd "$here"
# the version the Makefile compiles in, from ordering.control
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" ordering.control)

# One version number, ordering.control's; PGXN wants it as x.y.z.
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" ordering.control)
semver=$version
[[ $version =~ ^[0-9]+\.[0-9]+$ ]] && semver=$version.0
meta=$(perl -MJSON::PP -0777 -ne '$m = decode_json($_);
	print "$m->{version} $m->{provides}{ordering}{version}"' META.json)
if [ "$meta" != "$semver $semver" ]; then
	echo "META.json: version and provides.ordering.version are \"$meta\"," \
		"ordering.control's default_version $version wants $semver" >&2
	exit 1
fi
debian=$(sed -n '1s/^ordering (\([^)]*\)).*/\1/p' debian/changelog)
if [ "$debian" != "$version" ]; then
	echo "debian/changelog: the newest entry is version \"$debian\"," \
		"ordering.control's default_version is $version" >&2
	exit 1
fi
echo "versions: $version in ordering.control, META.json ($semver), debian/changelog"

cppcheck --enable=warning,performance,portability --std=c99 \
	--error-exitcode=1 --inline-suppr --quiet \
	-I "$server_inc" --suppress=missingIncludeSystem \
	--suppress="*:$server_inc/*" -D__GNUC__ -DUSE_ASSERT_CHECKING \
	-DORDERING_VERSION="\"$version\"" \
	src/ bench/probe/
echo "cppcheck: clean"

# WarningsAsErrors makes clang-tidy exit non-zero on any finding
if ! out=$(clang-tidy --quiet src/*.c bench/probe/*.c -- -I"$server_inc" \
	-I"$(dirname "$server_inc")/internal" -D_GNU_SOURCE \
	-DORDERING_VERSION="\"$version\"" 2>&1); then
	grep -v "warnings generated" <<<"$out"
	exit 1
fi
echo "clang-tidy: clean"
