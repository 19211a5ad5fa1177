# PGXS build of the ordering extension.
#
# Regression tests live in sql/ + expected/ (pg_regress), isolation specs in
# test/specs + test/expected, TAP tests in test/t.  All of them run on their
# own throwaway servers because they need shared_preload_libraries; see
# test/run.sh for the one command that installs, builds and runs everything.

EXTENSION = ordering
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" ordering.control)

MODULE_big = ordering
OBJS = \
	src/ordering.o \
	src/catalog.o \
	src/plans.o \
	src/keyed.o \
	src/producer.o \
	src/consumer.o \
	src/parked.o \
	src/newer_only.o \
	src/stats.o \
	src/triggers.o \
	src/gaps.o \
	src/worker.o

DATA = sql/ordering--$(EXTVERSION).sql

REGRESS = producer consumer gaps stats search_path gaps_search_path privileges hot_paths bad_input
REGRESS_OPTS = --inputdir=. --temp-instance=./tmp_check_regress \
	--temp-config=test/ordering.conf --load-extension=ordering

ISOLATION = producer_order keyed_reindex consumer_deliver consumer_apply consumer_newer_only gaps_sweep \
	gaps_race
ISOLATION_OPTS = --inputdir=test --temp-instance=./tmp_check_isolation \
	--temp-config=test/ordering.conf --load-extension=ordering

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare

EXTRA_CLEAN = tmp_check_regress tmp_check_isolation output_iso \
	results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# One target per suite, so test/run.sh can run them on separate servers and
# report each; "installcheck" (from PGXS) still runs all three.
.PHONY: installcheck-regress installcheck-isolation installcheck-tap
installcheck-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)

installcheck-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)

installcheck-tap:
	$(prove_installcheck)
