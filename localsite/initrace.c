/* The smallest program that meets Open MPI's start-up race (localsite/initracebench.py):
 * MPI_Init, then at once a message to the next rank and a sum over all, as OpenFOAM's
 * first exchanges do. Exit 0 only when the ring's message came from the rank before. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, in = -1, sum = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 7, &in, 1, MPI_INT,
                 (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
    {
        printf("initrace: %d ranks, sum %d\n", size, sum);
    }
    MPI_Finalize();
    return in == (rank + size - 1) % size ? 0 : 1;
}
