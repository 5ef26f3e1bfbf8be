/* Round-trip time between ranks 0 and 1 (seed 000 Table 2): for each message size, given as
 * a number of double-precision scalars, rank 0 sends and rank 1 sends back, REPEATS times
 * after WARMUP untimed round trips; rank 0 prints the mean round trip in microseconds.
 * Every other rank waits at the final barrier. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define WARMUP 1000
#define REPEATS 10000

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
    for (int a = 1; a < argc; ++a)
    {
        const int n = atoi(argv[a]);
        double* buffer = calloc(n > 0 ? n : 1, sizeof(double));
        double start = 0.0;
        for (int i = 0; i < WARMUP + REPEATS; ++i)
        {
            if (i == WARMUP)
            {
                MPI_Barrier(MPI_COMM_WORLD);
                start = MPI_Wtime();
            }
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
        const double elapsed = MPI_Wtime() - start;
        if (rank == 0)
        {
            printf("pingpong size %d rtt_us %.4f\n", n, 1e6*elapsed/REPEATS);
            fflush(stdout);
        }
        free(buffer);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
