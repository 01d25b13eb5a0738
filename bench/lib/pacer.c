/* pacer.c — what the machine alone allows an open model's lateness: a
 * pacer with no network and no runtime, paced as stampede, wrk2 and oha
 * pace (woken at most 1 ms before a batch of arrivals, each started once
 * due), doing a fixed amount of CPU work per arrival. With WORK_US 0 the
 * lateness is the timer's and the scheduler's; with the CPU a generator
 * spends per request it is what a generator of that cost meets on this
 * machine, however it is written (bench/pacefloor.sh).
 *
 *   pacer RATE SECS WORK_US
 * prints: rate R work W us: lateness p50 … p99 … p99.9 … max … us; late>1ms N of M
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static volatile uint64_t sink;

/* work runs iters rounds of a multiply-xor hash: CPU time, not wall
 * time, so a CPU taken away for a while makes it late as it would a
 * generator. */
static void work(int64_t iters) {
	uint64_t h = 1469598103934665603ull;
	for (int64_t i = 0; i < iters; i++) {
		h ^= (uint64_t)i;
		h *= 1099511628211ull;
	}
	sink = h;
}

/* itersPerUS: the fastest of 50 timed millisecond-sized runs, so a
 * stall during calibration does not shrink the work. */
static double itersPerUS(void) {
	double best = 0;
	for (int r = 0; r < 50; r++) {
		uint64_t a = now();
		work(600000);
		double per = 600000.0 / ((now() - a) / 1e3);
		if (per > best)
			best = per;
	}
	return best;
}

static int cmp(const void *a, const void *b) {
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: pacer RATE SECS WORK_US\n");
		return 2;
	}
	int64_t rate = atoll(argv[1]), secs = atoll(argv[2]);
	double workUS = atof(argv[3]);
	if (rate <= 0 || secs <= 0 || workUS < 0) {
		fprintf(stderr, "pacer: RATE and SECS must be positive, WORK_US not negative\n");
		return 2;
	}
	int64_t iters = (int64_t)(workUS * itersPerUS());
	int64_t n = rate * secs, gap = 1000000000ll / rate, ahead = 1000000;
	int64_t *late = malloc((size_t)n * sizeof *late);
	if (!late) {
		perror("pacer");
		return 1;
	}
	uint64_t t0 = now() + 10000000ull;
	for (int64_t k = 0; k < n;) {
		uint64_t due = t0 + (uint64_t)(k * gap), t = now();
		if (t + ahead < due) {
			uint64_t wake = due - ahead;
			struct timespec ts = {.tv_sec = wake / 1000000000ull, .tv_nsec = wake % 1000000000ull};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			t = now();
		}
		for (; k < n && t0 + (uint64_t)(k * gap) <= t + ahead; k++) {
			int64_t d = (int64_t)t - (int64_t)(t0 + (uint64_t)(k * gap));
			late[k] = d > 0 ? d : 0;
			work(iters);
			t = now();
		}
	}
	int64_t over = 0;
	for (int64_t k = 0; k < n; k++)
		over += late[k] > 1000000;
	qsort(late, (size_t)n, sizeof *late, cmp);
	printf("rate %lld work %.1f us: lateness p50 %.0f p99 %.0f p99.9 %.0f max %.0f us; late>1ms %lld of %lld\n",
	       (long long)rate, workUS, late[n / 2] / 1e3, late[n * 99 / 100] / 1e3, late[n * 999 / 1000] / 1e3,
	       late[n - 1] / 1e3, (long long)over, (long long)n);
	free(late);
	return 0;
}
