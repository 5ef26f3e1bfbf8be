/* Every link between the nodes of an allocation, measured: one rank per node, and for each
 * pair of ranks a round trip of one double (latency) and of BW_BYTES messages (bandwidth).
 * rank 0 prints one line per pair:
 *
 *     link <i> <j> <host i> <host j> rtt_us <median round trip> MBps <bandwidth>
 *
 * Pairs are met in the rounds of a round-robin tournament (the circle method: N - 1 rounds
 * of N/2 disjoint pairs; an odd N gets a bye), so that a large allocation is screened in
 * N - 1 steps, all pairs of a round at once, as JUBE's LinkTest does. With --serial, one pair
 * at a time, the others waiting at a barrier: for nodes that share a machine's cores (an
 * emulated cluster), where pairs measured at once would measure each other.
 *
 * Each figure is the median over BATCHES batches (of BATCH round trips for latency, BW_BATCH
 * for bandwidth), after untimed warm-up round trips: a batch that an interrupt hit does not
 * move it. The whole schedule is met REPEATS times and each link keeps the median of its
 * REPEATS figures: a link measured while something else ran on its nodes is not judged by
 * that one measurement.
 *
 * Ranks that wait for the others (in a barrier) sleep between tests of a non-blocking
 * barrier instead of polling: where nodes share cores, a polling rank would take them from
 * the pair being measured. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/median.h"

#define WARMUP 50
#define BATCHES 9
#define BATCH 50
#define BW_WARMUP 2
#define BW_BATCH 3
#define BW_BYTES (1 << 20)
#define REPEATS 3

/* A barrier whose waiting ranks sleep (50 us at a time) instead of polling. */
static void quietBarrier(void)
{
    MPI_Request request;
    int done = 0;
    const struct timespec nap = {0, 50000};
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    while (!done)
    {
        nanosleep(&nap, NULL);
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
}

/* Round trips of n bytes with peer: the lower rank of the pair sends first. */
static void roundTrips(char* buffer, int n, int peer, int first, int count)
{
    for (int i = 0; i < count; ++i)
    {
        if (first)
        {
            MPI_Send(buffer, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buffer, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        else
        {
            MPI_Recv(buffer, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buffer, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        }
    }
}

/* The median over BATCHES of the mean seconds per round trip of n bytes with peer. */
static double timed(char* buffer, int n, int peer, int first, int warmup, int batch)
{
    double means[BATCHES];
    roundTrips(buffer, n, peer, first, warmup);
    for (int b = 0; b < BATCHES; ++b)
    {
        const double start = MPI_Wtime();
        roundTrips(buffer, n, peer, first, batch);
        means[b] = (MPI_Wtime() - start)/batch;
    }
    return median(means, BATCHES);
}

/* rank's partner in round r of the circle method over m (even) players; m - 1 is fixed. */
static int partner(int rank, int r, int m)
{
    if (rank == m - 1)
    {
        return r;
    }
    const int p = ((2*r - rank) % (m - 1) + (m - 1)) % (m - 1);
    return p == rank ? m - 1 : p;
}

/* Measure the link to peer in repeat k; the lower rank keeps the figures (rtt in s, MB/s)
 * at [peer*REPEATS + k]. */
static void measure(char* buffer, int rank, int peer, int k, double* rtt, double* mbps)
{
    const int first = rank < peer;
    const double small = timed(buffer, 8, peer, first, WARMUP, BATCH);
    const double large = timed(buffer, BW_BYTES, peer, first, BW_WARMUP, BW_BATCH);
    if (first)
    {
        rtt[peer*REPEATS + k] = small;
        mbps[peer*REPEATS + k] = 2.0*BW_BYTES/large/1e6;
    }
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int serial = argc > 1 && strcmp(argv[1], "--serial") == 0;

    char* buffer = calloc(BW_BYTES, 1);
    /* This rank's figures of its links to higher ranks, REPEATS each. */
    double* rtts = malloc((size_t)size*REPEATS*sizeof(double));
    double* mbpss = malloc((size_t)size*REPEATS*sizeof(double));
    for (int k = 0; k < REPEATS; ++k)
    {
        if (serial)
        {
            for (int i = 0; i < size; ++i)
            {
                for (int j = i + 1; j < size; ++j)
                {
                    if (rank == i || rank == j)
                    {
                        measure(buffer, rank, rank == i ? j : i, k, rtts, mbpss);
                    }
                    quietBarrier();
                }
            }
        }
        else
        {
            const int m = size + size % 2;
            for (int r = 0; r < m - 1; ++r)
            {
                const int peer = partner(rank, r, m);
                if (peer < size)
                {
                    measure(buffer, rank, peer, k, rtts, mbpss);
                }
                quietBarrier();
            }
        }
    }
    /* Row of this rank: the median figure of each link to a higher rank, -1 where none. */
    double* rtt = malloc(size*sizeof(double));
    double* mbps = malloc(size*sizeof(double));
    for (int j = 0; j < size; ++j)
    {
        rtt[j] = j > rank ? median(rtts + (size_t)j*REPEATS, REPEATS) : -1.0;
        mbps[j] = j > rank ? median(mbpss + (size_t)j*REPEATS, REPEATS) : -1.0;
    }

    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int length = 0;
    MPI_Get_processor_name(host, &length);
    char* hosts = rank == 0 ? malloc((size_t)size*MPI_MAX_PROCESSOR_NAME) : NULL;
    double* allRtt = rank == 0 ? malloc((size_t)size*size*sizeof(double)) : NULL;
    double* allMbps = rank == 0 ? malloc((size_t)size*size*sizeof(double)) : NULL;
    MPI_Gather
    (
        host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
        hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD
    );
    MPI_Gather(rtt, size, MPI_DOUBLE, allRtt, size, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(mbps, size, MPI_DOUBLE, allMbps, size, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0)
    {
        printf
        (
            "screening ranks %d mode %s bytes %d repeats %d\n",
            size, serial ? "serial" : "rounds", BW_BYTES, REPEATS
        );
        for (int i = 0; i < size; ++i)
        {
            for (int j = i + 1; j < size; ++j)
            {
                printf
                (
                    "link %d %d %s %s rtt_us %.3f MBps %.1f\n",
                    i, j,
                    hosts + (size_t)i*MPI_MAX_PROCESSOR_NAME,
                    hosts + (size_t)j*MPI_MAX_PROCESSOR_NAME,
                    1e6*allRtt[(size_t)i*size + j],
                    allMbps[(size_t)i*size + j]
                );
            }
        }
        fflush(stdout);
    }
    free(hosts);
    free(allRtt);
    free(allMbps);
    free(rtt);
    free(mbps);
    free(rtts);
    free(mbpss);
    free(buffer);
    MPI_Finalize();
    return 0;
}
