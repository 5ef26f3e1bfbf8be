/* Round-trip time between ranks 0 and 1 (seed 000 Table 2): for each message size, given as
 * a number of double-precision scalars, rank 0 sends and rank 1 sends back, WARMUP untimed
 * round trips, then BATCHES batches of BATCH round trips; rank 0 prints the median of the
 * batches' mean round trips in microseconds (a batch that a preemption or an interrupt hit
 * does not move the median, as it would move one mean over all round trips).
 * Every other rank waits at the final barrier.
 *
 * Then, on the same ranks, what a validation of the fabric needs beside latency: the
 * bandwidth of BW_BYTES messages (round trips: 2 x bytes / time, the median over BATCHES
 * batches of BW_BATCH), and the latency of an MPI_Allreduce of one scalar and an
 * MPI_Alltoall of one scalar per rank (the calls a solver makes every iteration), each the
 * median over BATCHES batches of BATCH calls. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/median.h"

#define WARMUP 1000
#define BATCHES 20
#define BATCH 500
#define BW_BYTES (1 << 20)
#define BW_BATCH 10

/* One round trip of n scalars between ranks 0 and 1. */
static void roundTrip(double* buffer, int n, int rank)
{
    if (rank == 0)
    {
        MPI_Send(buffer, n, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buffer, n, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    else if (rank == 1)
    {
        MPI_Recv(buffer, n, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer, n, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    }
}

/* What is timed: 0 a round trip, 1 an all-reduction, 2 an all-to-all. */
static void once(int what, double* buffer, int n, int rank, double* sendv, double* recvv)
{
    if (what == 0)
    {
        roundTrip(buffer, n, rank);
    }
    else if (what == 1)
    {
        double sum = 0.0;
        MPI_Allreduce(buffer, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    else
    {
        MPI_Alltoall(sendv, 1, MPI_DOUBLE, recvv, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    }
}

/* The median over BATCHES of the mean seconds per call, after warmup untimed calls. */
static double timed
(
    int what, int n, int warmup, int batch, int rank, double* sendv, double* recvv
)
{
    double* buffer = calloc(n > 0 ? n : 1, sizeof(double));
    double means[BATCHES];
    for (int i = 0; i < warmup; ++i)
    {
        once(what, buffer, n, rank, sendv, recvv);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int b = 0; b < BATCHES; ++b)
    {
        const double start = MPI_Wtime();
        for (int i = 0; i < batch; ++i)
        {
            once(what, buffer, n, rank, sendv, recvv);
        }
        means[b] = (MPI_Wtime() - start)/batch;
    }
    free(buffer);
    return median(means, BATCHES);
}

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
    {
        fprintf(stderr, "pingpong: needs 2 ranks, got %d\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double* sendv = calloc(size, sizeof(double));
    double* recvv = calloc(size, sizeof(double));
    for (int a = 1; a < argc; ++a)
    {
        const int n = atoi(argv[a]);
        const double rtt = timed(0, n, WARMUP, BATCH, rank, sendv, recvv);
        if (rank == 0)
        {
            printf("pingpong size %d rtt_us %.4f\n", n, 1e6*rtt);
            fflush(stdout);
        }
    }

    const int n = BW_BYTES/(int)sizeof(double);
    const double bwRtt = timed(0, n, BW_BATCH, BW_BATCH, rank, sendv, recvv);
    if (rank == 0)
    {
        printf("pingpong bandwidth bytes %d MBps %.1f\n", BW_BYTES, 2.0*BW_BYTES/bwRtt/1e6);
        fflush(stdout);
    }
    for (int what = 1; what <= 2; ++what)
    {
        const double t = timed(what, 1, WARMUP, BATCH, rank, sendv, recvv);
        if (rank == 0)
        {
            printf
            (
                "collective %s us %.4f\n",
                what == 1 ? "allreduce" : "alltoall",
                1e6*t
            );
            fflush(stdout);
        }
    }
    free(sendv);
    free(recvv);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
