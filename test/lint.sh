#!/usr/bin/env bash
#
# Static analysis of the C code (the extension and the bench probes):
# the layering of src/'s folders, cppcheck and clang-tidy (its
# configuration is .clang-tidy at the top), and pgindent's layout.
# First, one version number: META.json and debian/changelog must carry
# ordering.control's default_version.  Exits non-zero on any finding.
#
# cppcheck and clang-tidy take minutes of CPU over the whole tree, and most
# runs change few files: both keep what they found per file in
# ORDERING_LINT_CACHE (default /var/cache/ordering-lint, where it can be
# made; empty: no cache), and analyse again only a file whose input
# changed.  For clang-tidy a file's input is its text as the compiler sees
# it (clang -E with the same flags: the file and every header it reads),
# with the tool's version, .clang-tidy and the flags; only a clean result
# is kept, so a finding is reported on every run.  cppcheck does the same
# with its own --cppcheck-build-dir (its checks across files included).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"
ensure_packages cppcheck clang-tidy pg-bsd-indent $(pg_packages)

server_inc=$("$PG_CONFIG_SYSTEM" --includedir-server)
cd "$here"
# the C files of the extension, one folder per subsystem (src/README.md),
# and the include path the Makefile gives them: every folder of src/
sources=$(find src -name '*.[ch]' | sort)
includes=$(find src -type d | sed 's/^/-I/')
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

# The layering of src/ (src/README.md): a file includes the headers of its
# own folder and of the folders that its folder's README.md names on its
# "May include:" line, and no other header of ours; header names are unique
# across the folders, since every folder is on the include path.
# shellcheck disable=SC2086 # $sources are words
perl -e '
	my (%where, %may, $bad);
	for my $f (@ARGV) {
		my ($dir, $name) = $f =~ m{^src/(?:(.*)/)?([^/]+)$};
		$dir //= ".";
		die "$f: a header of that name is also $where{$name}\n"
			if $name =~ /\.h$/ && exists $where{$name};
		$where{$name} = $f if $name =~ /\.h$/;
	}
	for my $f (@ARGV) {
		my ($dir) = $f =~ m{^src/(?:(.*)/)?[^/]+$};
		$dir //= ".";
		next if exists $may{$dir};
		my $readme = $dir eq "." ? "src/README.md" : "src/$dir/README.md";
		open(my $fh, "<", $readme) or die "$readme: missing ($f is in its folder)\n";
		my ($line) = grep { /^May include:/ } <$fh>;
		die "$readme: no \"May include:\" line\n" unless defined $line;
		$line =~ s/^May include:\s*//;
		$may{$dir} = { map { $_ => 1 } grep { $_ ne "nothing" } split /[\s,]+/, $line };
	}
	for my $f (@ARGV) {
		my ($dir) = $f =~ m{^src/(?:(.*)/)?[^/]+$};
		$dir //= ".";
		open(my $fh, "<", $f) or die "$f: $!\n";
		while (<$fh>) {
			next unless /^\s*#\s*include\s+"([^"]+)"/;
			my $to = $where{$1} or next;
			my ($todir) = $to =~ m{^src/(?:(.*)/)?[^/]+$};
			$todir //= ".";
			next if $todir eq $dir || $may{$dir}{$todir};
			print "$f:$.: includes $to, but its folder may include only: ",
				join(", ", sort keys %{$may{$dir}}) || "nothing", "\n";
			$bad = 1;
		}
	}
	exit($bad ? 1 : 0);
' $sources || { echo "layering: the includes above cross the folders' rules (src/README.md)" >&2; exit 1; }
echo "layering: clean"

# cppcheck and clang-tidy side by side, clang-tidy a file per process: each
# takes one core for a minute or more, and lint runs at nice 10 in
# test/run.sh, so it is often the last suite left and alone on the machine.
# cppcheck stays one process over the whole tree (its checks across files
# need it).
cppcheck_out=$(mktemp)
typedefs=$(mktemp)
indented=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$cppcheck_out" "$typedefs" "$indented" "$work"' EXIT

cache=${ORDERING_LINT_CACHE-/var/cache/ordering-lint}
if [ -n "$cache" ] && ! mkdir -p "$cache/clang-tidy" "$cache/cppcheck" 2>/dev/null; then
	echo "lint: no cache ($cache cannot be made): every file is analysed"
	cache=
fi

# shellcheck disable=SC2086 # $includes are words
cppcheck_flags=(--enable=warning,performance,portability --std=c99
	--error-exitcode=1 --inline-suppr --quiet
	-I "$server_inc" --suppress=missingIncludeSystem
	"--suppress=*:$server_inc/*" -D__GNUC__ -DUSE_ASSERT_CHECKING
	"-DORDERING_VERSION=\"$version\"" $includes)
cppcheck_build=
if [ -n "$cache" ]; then
	# one build directory per version and flags; each run works on a copy
	# of it and puts its copy back under a lock, so that runs side by side
	# neither wait for each other nor mix their files
	cppcheck_key=$( (cppcheck --version; printf '%s\n' "${cppcheck_flags[@]}") | sha256sum | cut -c1-16)
	cppcheck_cache=$cache/cppcheck/$cppcheck_key
	mkdir -p "$cppcheck_cache"
	cppcheck_build=$work/cppcheck
	mkdir -p "$cppcheck_build"
	(flock 9 && cp -a "$cppcheck_cache/." "$cppcheck_build/") 9>"$cppcheck_cache.lock"
	cppcheck_flags+=("--cppcheck-build-dir=$cppcheck_build")
fi
(
	rc=0
	cppcheck "${cppcheck_flags[@]}" src/ bench/probe/ || rc=$?
	if [ -n "$cppcheck_build" ]; then
		(flock 9 && cp -a "$cppcheck_build/." "$cppcheck_cache/") 9>"$cppcheck_cache.lock"
	fi
	exit "$rc"
) >"$cppcheck_out" 2>&1 &
cppcheck_pid=$!

# clang-tidy, a file per process; a file whose input is in the cache as
# clean is not analysed again.  WarningsAsErrors makes clang-tidy exit
# non-zero on any finding (and xargs then too).
# shellcheck disable=SC2206 # $includes are words
tidy_flags=($includes -I"$server_inc" -I"$(dirname "$server_inc")/internal"
	-D_GNU_SOURCE "-DORDERING_VERSION=\"$version\"")
# the clang of clang-tidy's own LLVM, for the text it sees
clang=$(dirname "$(readlink -f "$(command -v clang-tidy)")")/clang
tidy_key_base=$( (clang-tidy --version; cat .clang-tidy; printf '%s\n' "${tidy_flags[@]}") | sha256sum)
tidy_one() {
	local f=$1 key=
	if [ -n "$cache" ]; then
		key=$( (echo "$tidy_key_base $f"; "$clang" -E "${tidy_flags[@]}" "$f") | sha256sum | cut -c1-64)
		[ -e "$cache/clang-tidy/$key" ] && { echo "$f" >>"$work/tidy-cached"; return 0; }
	fi
	clang-tidy --quiet "$f" -- "${tidy_flags[@]}" || return 1
	[ -z "$key" ] || touch "$cache/clang-tidy/$key"
}
export -f tidy_one
export cache work clang tidy_key_base
tidy_status=0
# shellcheck disable=SC2086 # $sources are words
tidy_out=$(printf '%s\n' $(grep '\.c$' <<<"$sources") bench/probe/*.c |
	TIDY_FLAGS="${tidy_flags[*]}" xargs -P "$(nproc)" -I{} bash -c \
		'tidy_flags=($TIDY_FLAGS); tidy_one "$1"' _ {} 2>&1) || tidy_status=$?
tidy_cached=0
[ ! -f "$work/tidy-cached" ] || tidy_cached=$(wc -l <"$work/tidy-cached")

cppcheck_status=0
wait "$cppcheck_pid" || cppcheck_status=$?
cat "$cppcheck_out"
[ "$cppcheck_status" -eq 0 ] || exit 1
echo "cppcheck: clean"
if [ "$tidy_status" -ne 0 ]; then
	grep -v "warnings generated" <<<"$tidy_out"
	exit 1
fi
echo "clang-tidy: clean ($tidy_cached files unchanged since a clean run, from the cache)"

# pgindent's layout: PostgreSQL's indent (pg_bsd_indent) with pgindent's
# switches, then pgindent's one rewrite that concerns us (a function's
# return type "type *" keeps a single space).  indent must know which names
# are types: test/typedefs.pl collects them from the server's headers and
# ours, where pgindent would use the build farm's list.
# shellcheck disable=SC2086 # $sources are words
perl test/typedefs.pl $(find "$server_inc" -name '*.h') $sources bench/probe/*.c >"$typedefs"
printf '%s\n' FILE size_t ssize_t va_list uintptr_t intptr_t pid_t time_t off_t \
	sigjmp_buf >>"$typedefs"
unindented=0
for f in $sources bench/probe/*.c; do
	pg_bsd_indent -bad -bap -bbb -bc -bl -cli1 -cp33 -cdb -nce -d0 -di12 -nfc1 \
		-i4 -l79 -lp -lpl -nip -npro -sac -tpg -ts4 -U"$typedefs" "$f" "$indented"
	perl -0pi -e 's!^([A-Za-z_]\S*)[ \t]+\*$!$1 *!gm' "$indented"
	diff -u --label "$f" --label "$f (pgindent)" "$f" "$indented" || unindented=1
done
[ "$unindented" -eq 0 ] || { echo "pgindent: the files above differ from its layout" >&2; exit 1; }
echo "pgindent: clean"
