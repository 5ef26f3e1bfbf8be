/* Every link between the nodes of an allocation, measured: one rank per node, and for each
 * pair of ranks a round trip of one double (latency) and a stream of large messages each
 * way (bandwidth, both directions: a link can be slow one way). rank 0 prints one line per
 * pair and pass:
 *
 *     pass <k> <i> <j> <host i> <host j> rtt_us <round trip> MBps_ij <i to j> MBps_ji <j to i>
 *
 * Pairs are met in the rounds of a round-robin tournament (the circle method: N - 1 rounds
 * of N/2 disjoint pairs; an odd N gets a bye), so that a large allocation is screened in
 * N - 1 steps, all pairs of a round at once, as JSC's LinkTest does. With --serial, one pair
 * at a time, the others waiting at a barrier: for nodes that share a machine's cores (an
 * emulated cluster), where pairs measured at once would measure each other.
 *
 * The whole schedule is met --repeats times (passes), each pass in its own random order
 * (the ranks' seats at the tournament and its rounds shuffled; with --serial, the pairs):
 * a link meets other neighbours, and another moment, in every pass, and whoever judges the
 * figures can compare each pass's links with one another (drift between passes cancels) and
 * read the noise from pass to pass. --seed fixes the order (it is printed).
 *
 * Each figure is the median over BATCHES batches (of BATCH round trips for latency; of
 * WINDOW messages of --bytes each, acknowledged at the end, for bandwidth), after untimed
 * warm-up: a batch that an interrupt hit does not move it.
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
#define BW_BATCHES 5
#define WINDOW 4

/* A barrier whose waiting ranks sleep instead of polling: 50 us at first, each nap twice
 * the last up to 1 ms. A rank that waits out a whole pair's measurement (--serial: all but
 * two) then wakes about a thousand times a second, not twenty thousand: on cores shared with
 * the pair, each wake-up would land in the pair's round trips. */
static void quietBarrier(void)
{
    MPI_Request request;
    int done = 0;
    struct timespec nap = {0, 50000};
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    while (!done)
    {
        nanosleep(&nap, NULL);
        if (nap.tv_nsec < 1000000)
        {
            nap.tv_nsec *= 2;
        }
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

/* The median over BATCHES of the mean seconds per round trip of 8 bytes with peer. */
static double latency(char* buffer, int peer, int first)
{
    double means[BATCHES];
    roundTrips(buffer, 8, peer, first, WARMUP);
    for (int b = 0; b < BATCHES; ++b)
    {
        const double start = MPI_Wtime();
        roundTrips(buffer, 8, peer, first, BATCH);
        means[b] = (MPI_Wtime() - start)/BATCH;
    }
    return median(means, BATCHES);
}

/* One batch: WINDOW messages of n bytes from the sender to the receiver, all posted at
 * once, and an 8-byte acknowledgement back; the sender's seconds for it. */
static double stream(char* buffer, int n, int peer, int sending)
{
    MPI_Request requests[WINDOW];
    const double start = MPI_Wtime();
    for (int w = 0; w < WINDOW; ++w)
    {
        if (sending)
        {
            MPI_Isend(buffer + (size_t)w*n, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &requests[w]);
        }
        else
        {
            MPI_Irecv(buffer + (size_t)w*n, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &requests[w]);
        }
    }
    MPI_Waitall(WINDOW, requests, MPI_STATUSES_IGNORE);
    char ack[8] = {0};
    if (sending)
    {
        MPI_Recv(ack, 8, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    else
    {
        MPI_Send(ack, 8, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
    }
    return MPI_Wtime() - start;
}

/* MB/s from the sender to the receiver: the median over BW_BATCHES streams, after one
 * untimed; meaningful on the sender's side. */
static double bandwidth(char* buffer, int n, int peer, int sending)
{
    double seconds[BW_BATCHES];
    stream(buffer, n, peer, sending);
    for (int b = 0; b < BW_BATCHES; ++b)
    {
        seconds[b] = stream(buffer, n, peer, sending);
    }
    return (double)WINDOW*n/median(seconds, BW_BATCHES)/1e6;
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

/* A shuffle of x[0..n) (Fisher-Yates) from rank 0's generator, the same on every rank. */
static void shuffled(int* x, int n, int rank)
{
    if (rank == 0)
    {
        for (int i = n - 1; i > 0; --i)
        {
            const int j = rand() % (i + 1);
            const int t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
    MPI_Bcast(x, n, MPI_INT, 0, MPI_COMM_WORLD);
}

/* Measure the link to peer in pass k: the round trip at [k*size + peer] of rtt, this rank's
 * bandwidth to peer at [k*size + peer] of mbps. The lower rank streams first. */
static void measure(char* buffer, int bytes, int rank, int peer, int k, int size,
                    double* rtt, double* mbps)
{
    const int first = rank < peer;
    rtt[(size_t)k*size + peer] = latency(buffer, peer, first);
    const double out = bandwidth(buffer, bytes, peer, first);
    const double in = bandwidth(buffer, bytes, peer, !first);
    mbps[(size_t)k*size + peer] = first ? out : in;
}

static int option(int argc, char** argv, const char* name, int otherwise)
{
    for (int i = 1; i + 1 < argc; ++i)
    {
        if (strcmp(argv[i], name) == 0)
        {
            return atoi(argv[i + 1]);
        }
    }
    return otherwise;
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int serial = 0;
    for (int i = 1; i < argc; ++i)
    {
        serial = serial || strcmp(argv[i], "--serial") == 0;
    }
    const int repeats = option(argc, argv, "--repeats", 5);
    const int bytes = option(argc, argv, "--bytes", 1 << 20);
    unsigned seed = (unsigned)option(argc, argv, "--seed", (int)(time(NULL) % 1000000));
    MPI_Bcast(&seed, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
    if (repeats < 1 || bytes < 8)
    {
        if (rank == 0)
        {
            fprintf(stderr, "screening: --repeats must be 1 or more, --bytes 8 or more\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    srand(seed);

    char* buffer = calloc((size_t)WINDOW*bytes, 1);
    /* This rank's figures of its links, per pass: round trips, and its bandwidth to each
     * peer. */
    double* rtt = calloc((size_t)repeats*size, sizeof(double));
    double* mbps = calloc((size_t)repeats*size, sizeof(double));
    const int m = size + size % 2;
    const int nPairs = size*(size - 1)/2;
    int* seat = malloc((size_t)m*sizeof(int));
    int* order = malloc((size_t)(serial ? nPairs : m)*sizeof(int));
    for (int k = 0; k < repeats; ++k)
    {
        if (serial)
        {
            for (int p = 0; p < nPairs; ++p)
            {
                order[p] = p;
            }
            shuffled(order, nPairs, rank);
            for (int p = 0; p < nPairs; ++p)
            {
                /* Pair number order[p] of the list (0,1), (0,2), ..., (1,2), ... */
                int i = 0, left = order[p];
                while (left >= size - 1 - i)
                {
                    left -= size - 1 - i;
                    ++i;
                }
                const int j = i + 1 + left;
                if (rank == i || rank == j)
                {
                    measure(buffer, bytes, rank, rank == i ? j : i, k, size, rtt, mbps);
                }
                quietBarrier();
            }
        }
        else
        {
            /* seat[s]: the rank at seat s (m - 1 seats turn, one is fixed); order: rounds */
            for (int s = 0; s < m; ++s)
            {
                seat[s] = s;
                order[s] = s;
            }
            shuffled(seat, m, rank);
            shuffled(order, m - 1, rank);
            int mine = 0;
            while (seat[mine] != rank)
            {
                ++mine;
            }
            for (int r = 0; r < m - 1; ++r)
            {
                const int peer = seat[partner(mine, order[r], m)];
                if (peer < size)
                {
                    measure(buffer, bytes, rank, peer, k, size, rtt, mbps);
                }
                quietBarrier();
            }
        }
    }

    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int length = 0;
    MPI_Get_processor_name(host, &length);
    const size_t each = (size_t)repeats*size;
    char* hosts = rank == 0 ? malloc((size_t)size*MPI_MAX_PROCESSOR_NAME) : NULL;
    double* allRtt = rank == 0 ? malloc(size*each*sizeof(double)) : NULL;
    double* allMbps = rank == 0 ? malloc(size*each*sizeof(double)) : NULL;
    MPI_Gather
    (
        host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
        hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD
    );
    MPI_Gather(rtt, (int)each, MPI_DOUBLE, allRtt, (int)each, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(mbps, (int)each, MPI_DOUBLE, allMbps, (int)each, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0)
    {
        printf
        (
            "screening ranks %d mode %s bytes %d window %d repeats %d seed %u\n",
            size, serial ? "serial" : "rounds", bytes, WINDOW, repeats, seed
        );
        for (int k = 0; k < repeats; ++k)
        {
            for (int i = 0; i < size; ++i)
            {
                for (int j = i + 1; j < size; ++j)
                {
                    /* [i*each + k*size + j]: rank i's figure of its link to j in pass k */
                    printf
                    (
                        "pass %d %d %d %s %s rtt_us %.3f MBps_ij %.1f MBps_ji %.1f\n",
                        k, i, j,
                        hosts + (size_t)i*MPI_MAX_PROCESSOR_NAME,
                        hosts + (size_t)j*MPI_MAX_PROCESSOR_NAME,
                        1e6*allRtt[(size_t)i*each + (size_t)k*size + j],
                        allMbps[(size_t)i*each + (size_t)k*size + j],
                        allMbps[(size_t)j*each + (size_t)k*size + i]
                    );
                }
            }
        }
        fflush(stdout);
    }
    free(hosts);
    free(allRtt);
    free(allMbps);
    free(seat);
    free(order);
    free(rtt);
    free(mbps);
    free(buffer);
    MPI_Finalize();
    return 0;
}
