/*-------------------------------------------------------------------------
 *
 * options.c
 *	  The demo program's command line: defaults, --help, parsing.
 *
 * Runs in the main thread before any other starts; opt is read-only after.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

/* The defaults; parse_options() changes what the command line names. */
Options		opt = {
	.producer_dsn = NULL,
	.consumer_dsn = NULL,
	.broker = NULL,
	.subscriptions = 2000,
	.events = 30000,
	.producers = 4,
	.relays = 3,
	.consumers = 12,
	.batch = 50,
	.plan_share = 0.5,
	.hot_share = 0.3,
	.rollback = 0.02,
	.flip = 0.5,
	.rate = 2000,
	.loss = 0.01,
	.duplicate = 0.05,
	.window = 200,
	.requeue = 0.05,
	.prefetch = 20,
	.pause_from = 0.3,
	.pause_to = 0.6,
	.timeout = 120,
	.seed = 0,
	.samples = NULL,
	.quiet = false,
	.poison = 5,
};

/* --help */
static void
usage(FILE *f)
{
	fprintf(f,
			"Usage: ordering_demo --producer-dsn CONNINFO --consumer-dsn CONNINFO [OPTION]...\n"
			"\n"
			"Runs the scenario of \"Handling Out-of-Order Events with Sequence Numbers\"\n"
			"end to end: producers change plans and add seats, relays publish the outbox,\n"
			"a transport reorders, duplicates and loses messages, twelve consumers apply\n"
			"them with and without the extension, and the gap loop heals what was lost.\n"
			"Prints a verification and exits 1 if a check fails.\n"
			"\n"
			"Databases (both need the ordering extension; the consumer database needs\n"
			"the library preloaded and listed in ordering.sweep_databases):\n"
			"  --dsn CONNINFO            both databases (producer and consumer in one)\n"
			"  --producer-dsn CONNINFO   the producer database\n"
			"  --consumer-dsn CONNINFO   the consumer database\n"
			"\n"
			"Workload:\n"
			"  --subscriptions N         subscriptions (default %d)\n"
			"  --events N                events to produce (default %d)\n"
			"  --producers N             producer connections (default %d)\n"
			"  --relays N                relay threads (default %d)\n"
			"  --consumers N             consumer workers (default %d)\n"
			"  --batch N                 rows per claim_unpublished (default %d)\n"
			"  --plan-share F            share of PlanChanged events, the rest SeatsAdded (default %.2f)\n"
			"  --hot-share F             share of events for the hottest 1%% of subscriptions (default %.2f)\n"
			"  --rollback F              share of producer transactions rolled back (default %.2f)\n"
			"  --flip F                  share of plan changes followed at once by another one\n"
			"                            of the same subscription (default %.2f)\n"
			"  --rate N                  events per second, all producers together; 0 = as\n"
			"                            fast as they go (default %d)\n"
			"  --poison N                SeatsAdded events that are bulk purchases, which the\n"
			"                            ledger's handler rejects until it is fixed at the end\n"
			"                            (default %d)\n"
			"\n"
			"Transport:\n"
			"  --broker amqp://[USER:PASS@]HOST:PORT   RabbitMQ instead of the in-process queue\n"
			"  --loss F                  share of messages lost, never delivered (default %.3f)\n"
			"  --duplicate F             share of messages delivered twice (default %.3f)\n"
			"  --window N                in-process: a consumer takes a random one of the\n"
			"                            first N waiting messages (default %d)\n"
			"  --requeue F               broker: share of deliveries requeued unprocessed (default %.3f)\n"
			"  --prefetch N              broker: unacked messages per consumer (default %d)\n"
			"\n"
			"Gap loop:\n"
			"  --pause-gap-loop A:B      pause the gap listener while the share of events\n"
			"                            produced is in [A, B) (default %.1f:%.1f; 0:0 = never)\n"
			"\n"
			"Run:\n"
			"  --timeout S               seconds to wait for the pipeline to drain (default %d)\n"
			"  --seed N                  random seed (default 0)\n"
			"  --samples FILE            write parked-events samples (every 100 ms) for the chart\n"
			"  --quiet                   no progress line\n"
			"  --check-options           only check the options (exit 2 if one is bad)\n"
			"  --state-consumer KIND     how billing applies PlanChanged: apply_if_newer (default)\n"
			"                            or newer_only (a plain upsert guarded by the\n"
			"                            ordering.newer_only trigger on demo_billing)\n"
			"  --without-extension       the checked consumers apply in arrival order without\n"
			"                            the extension: the verification must then fail\n"
			"  --help                    this text\n",
			opt.subscriptions, opt.events, opt.producers, opt.relays, opt.consumers,
			opt.batch, opt.plan_share, opt.hot_share, opt.rollback, opt.flip, opt.rate,
			opt.poison, opt.loss,
			opt.duplicate, opt.window, opt.requeue, opt.prefetch, opt.pause_from,
			opt.pause_to, opt.timeout);
}

/* Bad usage: say why, exit 2. */
static void
bad(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vcomplain("", fmt, ap, "\nTry \"ordering_demo --help\".\n");
	va_end(ap);
	exit(2);
}

/* Parse an integer option in [lo, hi]. */
static int
int_arg(const char *name, const char *v, int lo, int hi)
{
	char	   *end;
	long		x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < lo || x > hi)
		bad("--%s must be an integer from %d to %d, not \"%s\"", name, lo, hi, v);
	return (int) x;
}

/* Parse a share option in [0, 1]. */
static double
share_arg(const char *name, const char *v)
{
	char	   *end;
	double		x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || *end || end == v || !(x >= 0 && x <= 1))
		bad("--%s must be a number from 0 to 1, not \"%s\"", name, v);
	return x;
}

/* Parse the command line into opt. */
void
parse_options(int argc, char **argv)
{
	static struct option longopts[] = {
		{"dsn", required_argument, NULL, 'd'},
		{"producer-dsn", required_argument, NULL, 'P'},
		{"consumer-dsn", required_argument, NULL, 'C'},
		{"broker", required_argument, NULL, 'b'},
		{"subscriptions", required_argument, NULL, 's'},
		{"events", required_argument, NULL, 'e'},
		{"producers", required_argument, NULL, 'p'},
		{"relays", required_argument, NULL, 'r'},
		{"consumers", required_argument, NULL, 'c'},
		{"batch", required_argument, NULL, 'B'},
		{"plan-share", required_argument, NULL, 1},
		{"hot-share", required_argument, NULL, 2},
		{"rollback", required_argument, NULL, 3},
		{"loss", required_argument, NULL, 4},
		{"duplicate", required_argument, NULL, 5},
		{"window", required_argument, NULL, 6},
		{"requeue", required_argument, NULL, 7},
		{"prefetch", required_argument, NULL, 8},
		{"pause-gap-loop", required_argument, NULL, 9},
		{"timeout", required_argument, NULL, 10},
		{"seed", required_argument, NULL, 11},
		{"samples", required_argument, NULL, 12},
		{"quiet", no_argument, NULL, 'q'},
		{"check-options", no_argument, NULL, 13},
		{"flip", required_argument, NULL, 14},
		{"rate", required_argument, NULL, 15},
		{"without-extension", no_argument, NULL, 16},
		{"state-consumer", required_argument, NULL, 17},
		{"poison", required_argument, NULL, 18},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	int			ch;
	bool		check_only = false;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
	{
		switch (ch)
		{
			case 'd':
				opt.producer_dsn = opt.consumer_dsn = optarg;
				break;
			case 'P':
				opt.producer_dsn = optarg;
				break;
			case 'C':
				opt.consumer_dsn = optarg;
				break;
			case 'b':
				if (strncmp(optarg, "amqp://", 7) != 0)
					bad("--broker must be an amqp:// URL, not \"%s\"", optarg);
				opt.broker = optarg;
				break;
			case 's':
				opt.subscriptions = int_arg("subscriptions", optarg, 1, 10000000);
				break;
			case 'e':
				opt.events = int_arg("events", optarg, 1, 100000000);
				break;
			case 'p':
				opt.producers = int_arg("producers", optarg, 1, MAX_THREADS);
				break;
			case 'r':
				opt.relays = int_arg("relays", optarg, 1, MAX_THREADS);
				break;
			case 'c':
				opt.consumers = int_arg("consumers", optarg, 1, MAX_THREADS);
				break;
			case 'B':
				opt.batch = int_arg("batch", optarg, 1, 10000);
				break;
			case 1:
				opt.plan_share = share_arg("plan-share", optarg);
				break;
			case 2:
				opt.hot_share = share_arg("hot-share", optarg);
				break;
			case 3:
				opt.rollback = share_arg("rollback", optarg);
				if (opt.rollback > 0.9)
					bad("--rollback must be at most 0.9");
				break;
			case 4:
				opt.loss = share_arg("loss", optarg);
				if (opt.loss > 0.5)
					bad("--loss must be at most 0.5 (each resend may be lost again)");
				break;
			case 5:
				opt.duplicate = share_arg("duplicate", optarg);
				break;
			case 6:
				opt.window = int_arg("window", optarg, 1, 100000000);
				break;
			case 7:
				opt.requeue = share_arg("requeue", optarg);
				if (opt.requeue > 0.9)
					bad("--requeue must be at most 0.9");
				break;
			case 8:
				opt.prefetch = int_arg("prefetch", optarg, 1, 65535);
				break;
			case 9:
				{
					char	   *colon = strchr(optarg, ':');
					char	   *end;

					if (!colon)
						bad("--pause-gap-loop must be A:B (shares from 0 to 1), not \"%s\"", optarg);
					*colon = '\0';
					opt.pause_from = strtod(optarg, &end);
					if (*end || end == optarg)
						bad("--pause-gap-loop must be A:B (shares from 0 to 1)");
					opt.pause_to = strtod(colon + 1, &end);
					if (*end || end == colon + 1 || opt.pause_from < 0 ||
						opt.pause_to > 1 || opt.pause_from > opt.pause_to)
						bad("--pause-gap-loop must be A:B with 0 <= A <= B <= 1");
					break;
				}
			case 10:
				opt.timeout = int_arg("timeout", optarg, 1, 86400);
				break;
			case 11:
				opt.seed = (unsigned) int_arg("seed", optarg, 0, 2147483647);
				break;
			case 12:
				opt.samples = optarg;
				break;
			case 'q':
				opt.quiet = true;
				break;
			case 13:
				check_only = true;
				break;
			case 14:
				opt.flip = share_arg("flip", optarg);
				break;
			case 15:
				opt.rate = int_arg("rate", optarg, 0, 100000000);
				break;
			case 16:
				opt.without_extension = true;
				break;
			case 17:
				if (strcmp(optarg, "newer_only") == 0)
					opt.newer_only = true;
				else if (strcmp(optarg, "apply_if_newer") == 0)
					opt.newer_only = false;
				else
					bad("--state-consumer must be apply_if_newer or newer_only, not \"%s\"", optarg);
				break;
			case 18:
				opt.poison = int_arg("poison", optarg, 0, 1000);
				break;
			case 'h':
				usage(stdout);
				exit(0);
			default:
				if (optopt)
					bad("option needs a value or is unknown: %s", argv[optind - 1]);
				bad("unknown option: %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bad("unexpected argument: %s", argv[optind]);
	if (check_only)
		exit(0);
	if (!opt.producer_dsn || !opt.consumer_dsn)
		bad("say which databases to use: --dsn, or --producer-dsn and --consumer-dsn");
}
