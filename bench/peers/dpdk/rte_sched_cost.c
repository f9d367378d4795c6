/* rte_sched_cost.c -- what one packet costs in DPDK's hierarchical scheduler (librte_sched),
 * measured in the same state as schedlab's core bench, plus an rte_ring FIFO floor.
 *
 * schedlab's own harness (bench/peers/dpdk/run.sh builds it against Debian's dpdk-dev).
 *
 * State: one port, one subport, P pipes, 16 queues per pipe (traffic classes 0..11 strict
 * priority, 12 = best effort with 4 WRR queues). B mbufs are queued; mbuf k is given pipe
 * k mod P and queue (k div P + pipe) mod 16, so every pipe holds B/P packets spread over its
 * traffic classes. Queue sizes are chosen so that nothing can be tail-dropped, and every
 * rate (port, subport, pipe, class) is the port rate, so the token buckets never throttle:
 * rte_sched credits from port->time, which advances by every packet it schedules.
 *
 * Timed loop: dequeue a burst, enqueue the same mbufs again. Every counted packet paid one
 * enqueue and one dequeue; the backlog stays B. ns/packet = CLOCK_MONOTONIC time / packets.
 * Each configuration is repeated with a fresh port; min, median and max are printed.
 *
 * Arguments after the EAL's `--`:
 *   --pipes P  --backlog B  --burst K (<= 256)  --pkts N (per repetition)  --reps R
 *   --no-fifo  (skip the rte_ring rows)
 * Output, one line per measured scheduler:
 *   RESULT <name> pipes=P backlog=B burst=K median_ns_per_pkt=.. min_ns=.. max_ns=..
 *          short_deq=.. drops=..
 * where short_deq counts dequeue calls that returned fewer than K packets (summed over the
 * repetitions) and drops must be 0. Exit status 1 on any DPDK error, 2 on bad arguments.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_sched.h>

#define BURST_MAX 256
#define REPS_MAX 64
#define PORT_RATE_BYTES 12500000000ULL /* 100 Gbit/s */
#define FRAME_LEN 64

struct options {
	uint32_t pipes, backlog, burst, reps;
	uint64_t packets;
	int fifo;
};

struct sample {
	double ns_per_packet;
	uint64_t short_dequeues;
	uint64_t drops;
};

static double monotonic_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint32_t round_up_pow2(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

static int by_cost(const void *a, const void *b)
{
	double x = ((const struct sample *)a)->ns_per_packet;
	double y = ((const struct sample *)b)->ns_per_packet;
	return (x > y) - (x < y);
}

static void usage_error(const char *what, const char *value)
{
	fprintf(stderr, "rte_sched_cost: %s = %s: must be a positive integer%s\n", what,
		value ? value : "(missing)",
		strcmp(what, "--burst") == 0 ? " <= 256" : "");
	exit(2);
}

static uint64_t positive(const char *what, const char *text, uint64_t max)
{
	char *end = NULL;
	unsigned long long v;
	errno = 0;
	v = strtoull(text ? text : "", &end, 10);
	if (errno || !text || *text == '\0' || *end != '\0' || v == 0 || v > max)
		usage_error(what, text);
	return v;
}

static void parse(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"pipes", required_argument, NULL, 'p'}, {"backlog", required_argument, NULL, 'b'},
		{"burst", required_argument, NULL, 'k'}, {"pkts", required_argument, NULL, 'n'},
		{"reps", required_argument, NULL, 'r'},	 {"no-fifo", no_argument, NULL, 'f'},
		{NULL, 0, NULL, 0}};
	int c;
	*o = (struct options){.pipes = 1024, .backlog = 4096, .burst = 32, .reps = 3,
			      .packets = 5000000, .fifo = 1};
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'p': o->pipes = (uint32_t)positive("--pipes", optarg, 1u << 20); break;
		case 'b': o->backlog = (uint32_t)positive("--backlog", optarg, 1u << 24); break;
		case 'k': o->burst = (uint32_t)positive("--burst", optarg, BURST_MAX); break;
		case 'n': o->packets = positive("--pkts", optarg, UINT64_MAX >> 1); break;
		case 'r': o->reps = (uint32_t)positive("--reps", optarg, REPS_MAX); break;
		case 'f': o->fifo = 0; break;
		default:
			fprintf(stderr, "rte_sched_cost: unknown argument (see the file header)\n");
			exit(2);
		}
	}
}

/* Traffic class and queue of mbuf k for P pipes: 16 queues per pipe visited in turn. */
static void place(uint32_t k, uint32_t pipes, uint32_t *pipe, uint32_t *tc, uint32_t *queue)
{
	uint32_t q = (k / pipes + k % pipes) % RTE_SCHED_QUEUES_PER_PIPE;
	*pipe = k % pipes;
	*tc = q < RTE_SCHED_TRAFFIC_CLASS_BE ? q : RTE_SCHED_TRAFFIC_CLASS_BE;
	*queue = q < RTE_SCHED_TRAFFIC_CLASS_BE ? 0 : q - RTE_SCHED_TRAFFIC_CLASS_BE;
}

static struct rte_sched_port *build_port(const struct options *o, uint32_t rep)
{
	static struct rte_sched_subport_profile_params subport_profile;
	static struct rte_sched_pipe_params pipe_profile;
	struct rte_sched_subport_params subport;
	struct rte_sched_port_params params;
	struct rte_sched_port *port;
	uint32_t per_queue, i;
	char name[48];

	memset(&subport_profile, 0, sizeof(subport_profile));
	subport_profile.tb_rate = PORT_RATE_BYTES;
	subport_profile.tb_size = 1000000;
	subport_profile.tc_period = 10;
	memset(&pipe_profile, 0, sizeof(pipe_profile));
	pipe_profile.tb_rate = PORT_RATE_BYTES;
	pipe_profile.tb_size = 1000000;
	pipe_profile.tc_period = 40;
	pipe_profile.tc_ov_weight = 1;
	for (i = 0; i < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; i++) {
		subport_profile.tc_rate[i] = PORT_RATE_BYTES;
		pipe_profile.tc_rate[i] = PORT_RATE_BYTES;
	}
	for (i = 0; i < RTE_SCHED_BE_QUEUES_PER_PIPE; i++)
		pipe_profile.wrr_weights[i] = 1;

	snprintf(name, sizeof(name), "port_%u_%u_%u", o->pipes, o->backlog, rep);
	memset(&params, 0, sizeof(params));
	params.name = name;
	params.socket = rte_socket_id() < 0 ? 0 : (int)rte_socket_id();
	params.rate = PORT_RATE_BYTES;
	params.mtu = 1522;
	params.frame_overhead = RTE_SCHED_FRAME_OVERHEAD_DEFAULT;
	params.n_subports_per_port = 1;
	params.n_subport_profiles = 1;
	params.n_max_subport_profiles = 1;
	params.subport_profiles = &subport_profile;
	params.n_pipes_per_subport = o->pipes;
	port = rte_sched_port_config(&params);
	if (!port) {
		fprintf(stderr, "rte_sched_cost: rte_sched_port_config failed for %u pipes\n",
			o->pipes);
		return NULL;
	}

	/* No queue can hold more than ceil(B / 16P) packets; leave room above that. */
	per_queue = (o->backlog + 16 * o->pipes - 1) / (16 * o->pipes);
	memset(&subport, 0, sizeof(subport));
	subport.n_pipes_per_subport_enabled = o->pipes;
	for (i = 0; i < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; i++)
		subport.qsize[i] = RTE_MAX(64u, round_up_pow2(per_queue + 1));
	subport.pipe_profiles = &pipe_profile;
	subport.n_pipe_profiles = 1;
	subport.n_max_pipe_profiles = 1;
	if (rte_sched_subport_config(port, 0, &subport, 0) != 0 ||
	    rte_sched_subport_tc_ov_config(port, 0, false) != 0) {
		fprintf(stderr, "rte_sched_cost: subport configuration failed\n");
		rte_sched_port_free(port);
		return NULL;
	}
	for (i = 0; i < o->pipes; i++) {
		if (rte_sched_pipe_config(port, 0, i, 0) != 0) {
			fprintf(stderr, "rte_sched_cost: rte_sched_pipe_config(%u) failed\n", i);
			rte_sched_port_free(port);
			return NULL;
		}
	}
	return port;
}

static int measure_sched(const struct options *o, struct rte_mbuf **mbufs, uint32_t rep,
			 struct sample *out)
{
	struct rte_sched_port *port = build_port(o, rep);
	struct rte_mbuf *burst[BURST_MAX];
	struct rte_sched_subport_stats stats;
	uint32_t tc_ov[RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE];
	uint64_t moved = 0, short_dequeues = 0, drops = 0, left;
	double start;
	uint32_t k, drained = 0, empty_calls = 0;
	int got, put;

	if (!port)
		return -1;
	for (k = 0; k < o->backlog; k++) {
		uint32_t pipe, tc, queue;
		place(k, o->pipes, &pipe, &tc, &queue);
		rte_sched_port_pkt_write(port, mbufs[k], 0, pipe, tc, queue, RTE_COLOR_GREEN);
	}
	for (k = 0; k < o->backlog; k += o->burst) {
		uint32_t n = RTE_MIN(o->burst, o->backlog - k);
		if ((uint32_t)rte_sched_port_enqueue(port, mbufs + k, n) != n) {
			fprintf(stderr, "rte_sched_cost: the scheduler refused the initial backlog\n");
			rte_sched_port_free(port);
			return -1;
		}
	}
	/* Warm-up of a tenth of the run, untimed. */
	for (left = o->packets / 10; left > 0;) {
		got = rte_sched_port_dequeue(port, burst, o->burst);
		put = rte_sched_port_enqueue(port, burst, got);
		drops += (uint64_t)(got - put);
		left -= RTE_MIN(left, (uint64_t)got);
		if (got == 0 && ++empty_calls > 1000000)
			break;
	}
	start = monotonic_ns();
	while (moved < o->packets) {
		got = rte_sched_port_dequeue(port, burst, o->burst);
		put = rte_sched_port_enqueue(port, burst, got);
		short_dequeues += (uint32_t)got < o->burst;
		drops += (uint64_t)(got - put);
		moved += (uint64_t)got;
	}
	out->ns_per_packet = (monotonic_ns() - start) / (double)moved;
	rte_sched_subport_read_stats(port, 0, &stats, tc_ov);
	for (k = 0; k < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; k++)
		drops += stats.n_pkts_tc_dropped[k];
	/* Take every mbuf back out so that the next repetition starts from the same state. */
	for (empty_calls = 0; drained < o->backlog && empty_calls < 100000;) {
		got = rte_sched_port_dequeue(port, burst, o->burst);
		drained += (uint32_t)got;
		empty_calls = got ? 0 : empty_calls + 1;
	}
	rte_sched_port_free(port);
	if (drained != o->backlog) {
		fprintf(stderr, "rte_sched_cost: got back %u of %u mbufs\n", drained, o->backlog);
		return -1;
	}
	out->short_dequeues = short_dequeues;
	out->drops = drops;
	return 0;
}

/* The same loop through a single-producer single-consumer ring; with `touch`, also reads
 * the two mbuf fields a scheduler must read (length and scheduling word). */
static int measure_fifo(const struct options *o, struct rte_mbuf **mbufs, uint32_t rep,
			int touch, struct sample *out)
{
	struct rte_mbuf *burst[BURST_MAX];
	struct rte_ring *ring;
	uint64_t moved = 0, short_dequeues = 0, checksum = 0;
	double start;
	unsigned int got, i;
	char name[48];

	snprintf(name, sizeof(name), "ring_%u_%d_%u", o->backlog, touch, rep);
	ring = rte_ring_create(name, round_up_pow2(o->backlog + o->burst + 1), rte_socket_id(),
			       RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!ring) {
		fprintf(stderr, "rte_sched_cost: rte_ring_create: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	rte_ring_enqueue_bulk(ring, (void **)mbufs, o->backlog, NULL);
	start = monotonic_ns();
	while (moved < o->packets) {
		got = rte_ring_dequeue_burst(ring, (void **)burst, o->burst, NULL);
		if (touch)
			for (i = 0; i < got; i++)
				checksum += burst[i]->pkt_len + burst[i]->hash.sched.queue_id;
		rte_ring_enqueue_burst(ring, (void **)burst, got, NULL);
		short_dequeues += got < o->burst;
		moved += got;
	}
	out->ns_per_packet = (monotonic_ns() - start) / (double)moved;
	out->short_dequeues = short_dequeues;
	out->drops = checksum == UINT64_MAX; /* keeps the reads; never true */
	rte_ring_free(ring);
	return 0;
}

static void report(const char *name, const struct options *o, struct sample *samples)
{
	uint64_t short_dequeues = 0, drops = 0;
	uint32_t r;
	for (r = 0; r < o->reps; r++) {
		short_dequeues += samples[r].short_dequeues;
		drops += samples[r].drops;
	}
	qsort(samples, o->reps, sizeof(*samples), by_cost);
	printf("RESULT %s pipes=%u backlog=%u burst=%u median_ns_per_pkt=%.2f min_ns=%.2f "
	       "max_ns=%.2f short_deq=%" PRIu64 " drops=%" PRIu64 "\n",
	       name, o->pipes, o->backlog, o->burst, samples[o->reps / 2].ns_per_packet,
	       samples[0].ns_per_packet, samples[o->reps - 1].ns_per_packet, short_dequeues,
	       drops);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct sample samples[REPS_MAX];
	struct rte_mempool *pool;
	struct rte_mbuf **mbufs;
	struct options o;
	uint32_t r, k;
	int used = rte_eal_init(argc, argv);

	if (used < 0) {
		fprintf(stderr, "rte_sched_cost: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	parse(argc - used, argv + used, &o);
	pool = rte_pktmbuf_pool_create("mbufs", round_up_pow2(o.backlog + 1) - 1, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	mbufs = calloc(o.backlog, sizeof(*mbufs));
	if (!pool || !mbufs || rte_pktmbuf_alloc_bulk(pool, mbufs, o.backlog) != 0) {
		fprintf(stderr, "rte_sched_cost: cannot allocate %u mbufs\n", o.backlog);
		return 1;
	}
	for (k = 0; k < o.backlog; k++) {
		mbufs[k]->pkt_len = FRAME_LEN;
		mbufs[k]->data_len = FRAME_LEN;
	}
	if (o.fifo) {
		for (r = 0; r < o.reps; r++)
			if (measure_fifo(&o, mbufs, r, 0, &samples[r]) != 0)
				return 1;
		report("fifo", &o, samples);
		for (r = 0; r < o.reps; r++)
			if (measure_fifo(&o, mbufs, r, 1, &samples[r]) != 0)
				return 1;
		report("fifo+touch", &o, samples);
	}
	for (r = 0; r < o.reps; r++)
		if (measure_sched(&o, mbufs, r, &samples[r]) != 0)
			return 1;
	report("rte_sched", &o, samples);
	rte_eal_cleanup();
	return 0;
}
