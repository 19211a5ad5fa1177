#!/usr/bin/perl
#
# Prints the typedef names declared in the C files named on the command
# line, one per line: the list pgindent's indent needs to tell a type from
# a variable (test/lint.sh gives it the server's headers and ours).
use strict;
use warnings;
my %names;
local $/;
for my $file (@ARGV)
{
	open(my $fh, '<', $file) or next;
	my $src = <$fh>;
	close $fh;
	$src =~ s{/\*.*?\*/}{ }gs;    # comments
	# typedef struct|union|enum [tag] { ... } Name;
	while ($src =~ /\btypedef\s+(?:struct|union|enum)\s*\w*\s*(\{(?:[^{}]++|(?1))*\})\s*\**\s*(\w+)\s*(?:\[[^\]]*\])?\s*;/g)
	{
		$names{$2} = 1;
	}
	# typedef ret (*Name) (...);
	while ($src =~ /\btypedef\s[^;{}]*?\(\s*\*\s*(\w+)\s*\)/g)
	{
		$names{$1} = 1;
	}
	# typedef type Name; (no braces, no parentheses)
	while ($src =~ /\btypedef\s+([^;{}()]*?)\b(\w+)\s*(?:\[[^\]]*\])?\s*;/g)
	{
		$names{$2} = 1;
	}
	# simplehash.h: SH_PREFIX x declares x_hash and x_iterator
	while ($src =~ /#\s*define\s+SH_PREFIX\s+(\w+)/g)
	{
		$names{"$1_hash"} = 1;
		$names{"$1_iterator"} = 1;
	}
}
print "$_\n" for sort keys %names;
