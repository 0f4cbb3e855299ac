/* Drives afrt's lateness rule with made-up region start and arrival times, so its decisions
 * are checked without depending on how busy the machine is.
 *
 * Usage: afrt_lag_driver PATTERN
 * PATTERN has one letter per region of a two-thread library: 'L' if worker 1, when it takes
 * part, starts 1 ms late and then works 10 us; 'o' if it starts on time. For each region
 * the driver prints how many threads ran it (afrt_threads_at_), one digit per region;
 * regions follow each other 11 us apart, so no probe falls due. */
#include <stdio.h>

#include "afrt.h"

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    afrt_set_num_threads(2);
    afrt_set_thread_lag_us(50.0);
    double now = 1000.0; /* seconds; the rule only takes differences */
    for (const char *p = argv[1]; *p; ++p) {
        const int team = afrt_threads_at_(now);
        const double lag = *p == 'L' ? 1e-3 : 1e-6;
        /* what afrt_arrive_ records in each thread of the region */
        afrt_arrivals_[0].epoch = afrt_epoch_;
        afrt_region_team_ = team;
        if (team > 1) {
            afrt_arrivals_[1].epoch = afrt_epoch_;
            afrt_arrivals_[1].at = now + lag;
        }
        now += (team > 1 ? lag : 0.0) + 1e-5;
        putchar('0' + team);
    }
    putchar('\n');
    return 0;
}
