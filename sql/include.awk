# Writes an SQL script with each line "\ir FILE" replaced by FILE's
# contents, FILE named relative to the script that includes it (as psql's
# \ir does): the install and update scripts of the extension are built this
# way from the definitions in sql/definitions/ (sql/README.md).  A file
# included twice into one script is an error: each object has one
# definition, run once.
#
#   awk -f sql/include.awk sql/ordering.sql > sql/ordering--X.Y.sql

function expand(file,    line, dir, status) {
	if (file in seen) {
		printf "%s: included twice\n", file > "/dev/stderr"
		exit 1
	}
	seen[file] = 1
	dir = file
	sub(/[^\/]*$/, "", dir)
	while ((status = (getline line < file)) > 0) {
		if (line ~ /^\\ir /)
			expand(dir substr(line, 5))
		else
			print line
	}
	if (status < 0) {
		printf "%s: cannot be read\n", file > "/dev/stderr"
		exit 1
	}
	close(file)
}

BEGIN {
	expand(ARGV[1])
	exit 0
}
