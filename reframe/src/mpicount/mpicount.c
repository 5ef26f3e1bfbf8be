/*
 * mpicount: count the MPI calls a program makes, by kind (a PMPI interposer).
 *
 * Preload it (LD_PRELOAD=libmpicount.so, forwarded to every rank) and each rank writes, at
 * MPI_Finalize, one line per kind it called, "<MPI function> <calls>", to
 * $TOPOFOAM_MPICOUNT_DIR/mpicount.<rank> (default: the working directory).
 *
 * Point-to-point sends are also counted per destination (its rank in MPI_COMM_WORLD), one
 * line "peer <MPI function> <destination> <messages>" each: with the placement (which host
 * each rank ran on) they say how many messages crossed nodes. OpenFOAM sends its tree
 * reductions, and the reduction schedule's, with blocking MPI_Send ("scheduled"), its halo
 * exchanges with MPI_Isend ("nonBlocking"), so MPI_Send's peers show the reductions' tree.
 *
 * Why: seed 001's optimizations remove calls (MULES's all-to-all of message sizes,
 * PCG's blocking reductions), and the schedule moves reductions' messages off the slow
 * links. Counting them shows what a patch removed or moved, independent of timing noise.
 * Only the application's calls are counted: MPI's own internal traffic does not go through
 * the MPI_ symbols.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind
{
    ALLREDUCE, IALLREDUCE, REDUCE, BCAST, ALLTOALL, ALLTOALLV, ALLGATHER, ALLGATHERV,
    GATHER, GATHERV, SCATTER, SCATTERV, BARRIER, PROBE, IPROBE, SEND, RECV, ISEND,
    IRECV, BSEND, SSEND, WAIT, WAITALL, WAITANY, WAITSOME, TEST, TESTALL, TESTANY,
    NKINDS
};

static const char *names[NKINDS] =
{
    "MPI_Allreduce", "MPI_Iallreduce", "MPI_Reduce", "MPI_Bcast", "MPI_Alltoall",
    "MPI_Alltoallv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Gather", "MPI_Gatherv",
    "MPI_Scatter", "MPI_Scatterv", "MPI_Barrier", "MPI_Probe", "MPI_Iprobe", "MPI_Send",
    "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Bsend", "MPI_Ssend", "MPI_Wait",
    "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany"
};

static unsigned long long counts[NKINDS];

/* The point-to-point kinds counted per destination, and their counts: [kind][world rank]. */
enum peerKind { PEER_SEND, PEER_ISEND, PEER_BSEND, PEER_SSEND, NPEERKINDS };
static const enum kind peerKinds[NPEERKINDS] = { SEND, ISEND, BSEND, SSEND };
static unsigned long long *peers[NPEERKINDS];
static int worldSize = 0;

/* The destination's rank in MPI_COMM_WORLD (-1 for MPI_PROC_NULL or an unknown rank). */
static int worldRank(int dest, MPI_Comm c)
{
    if (dest < 0)
    {
        return -1;
    }
    if (c == MPI_COMM_WORLD)
    {
        return dest;
    }
    MPI_Group from, world;
    int out = MPI_UNDEFINED;
    PMPI_Comm_group(c, &from);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Group_translate_ranks(from, 1, &dest, world, &out);
    PMPI_Group_free(&from);
    PMPI_Group_free(&world);
    return out == MPI_UNDEFINED ? -1 : out;
}

static void countPeer(enum peerKind k, int dest, MPI_Comm c)
{
    if (worldSize == 0)
    {
        PMPI_Comm_size(MPI_COMM_WORLD, &worldSize);
        for (int i = 0; i < NPEERKINDS; i++)
        {
            peers[i] = calloc((size_t)worldSize, sizeof(unsigned long long));
        }
    }
    int w = worldRank(dest, c);
    if (w >= 0 && w < worldSize && peers[k] != NULL)
    {
        peers[k][w]++;
    }
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c)
{
    counts[ALLREDUCE]++;
    return PMPI_Allreduce(s, r, n, t, o, c);
}

int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                   MPI_Request *q)
{
    counts[IALLREDUCE]++;
    return PMPI_Iallreduce(s, r, n, t, o, c, q);
}

int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c)
{
    counts[REDUCE]++;
    return PMPI_Reduce(s, r, n, t, o, root, c);
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    counts[BCAST]++;
    return PMPI_Bcast(b, n, t, root, c);
}

int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                 MPI_Comm c)
{
    counts[ALLTOALL]++;
    return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
}

int MPI_Alltoallv(const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r,
                  const int *rn, const int *rd, MPI_Datatype rt, MPI_Comm c)
{
    counts[ALLTOALLV]++;
    return PMPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, c);
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                  MPI_Comm c)
{
    counts[ALLGATHER]++;
    return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}

int MPI_Allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn,
                   const int *rd, MPI_Datatype rt, MPI_Comm c)
{
    counts[ALLGATHERV]++;
    return PMPI_Allgatherv(s, sn, st, r, rn, rd, rt, c);
}

int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
               int root, MPI_Comm c)
{
    counts[GATHER]++;
    return PMPI_Gather(s, sn, st, r, rn, rt, root, c);
}

int MPI_Gatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn,
                const int *rd, MPI_Datatype rt, int root, MPI_Comm c)
{
    counts[GATHERV]++;
    return PMPI_Gatherv(s, sn, st, r, rn, rd, rt, root, c);
}

int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                int root, MPI_Comm c)
{
    counts[SCATTER]++;
    return PMPI_Scatter(s, sn, st, r, rn, rt, root, c);
}

int MPI_Scatterv(const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r,
                 int rn, MPI_Datatype rt, int root, MPI_Comm c)
{
    counts[SCATTERV]++;
    return PMPI_Scatterv(s, sn, sd, st, r, rn, rt, root, c);
}

int MPI_Barrier(MPI_Comm c)
{
    counts[BARRIER]++;
    return PMPI_Barrier(c);
}

int MPI_Probe(int src, int tag, MPI_Comm c, MPI_Status *st)
{
    counts[PROBE]++;
    return PMPI_Probe(src, tag, c, st);
}

int MPI_Iprobe(int src, int tag, MPI_Comm c, int *flag, MPI_Status *st)
{
    counts[IPROBE]++;
    return PMPI_Iprobe(src, tag, c, flag, st);
}

int MPI_Send(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    counts[SEND]++;
    countPeer(PEER_SEND, dest, c);
    return PMPI_Send(b, n, t, dest, tag, c);
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st)
{
    counts[RECV]++;
    return PMPI_Recv(b, n, t, src, tag, c, st);
}

int MPI_Isend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
              MPI_Request *q)
{
    counts[ISEND]++;
    countPeer(PEER_ISEND, dest, c);
    return PMPI_Isend(b, n, t, dest, tag, c, q);
}

int MPI_Irecv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *q)
{
    counts[IRECV]++;
    return PMPI_Irecv(b, n, t, src, tag, c, q);
}

int MPI_Bsend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    counts[BSEND]++;
    countPeer(PEER_BSEND, dest, c);
    return PMPI_Bsend(b, n, t, dest, tag, c);
}

int MPI_Ssend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    counts[SSEND]++;
    countPeer(PEER_SSEND, dest, c);
    return PMPI_Ssend(b, n, t, dest, tag, c);
}

int MPI_Wait(MPI_Request *q, MPI_Status *st)
{
    counts[WAIT]++;
    return PMPI_Wait(q, st);
}

int MPI_Waitall(int n, MPI_Request q[], MPI_Status st[])
{
    counts[WAITALL]++;
    return PMPI_Waitall(n, q, st);
}

int MPI_Waitany(int n, MPI_Request q[], int *i, MPI_Status *st)
{
    counts[WAITANY]++;
    return PMPI_Waitany(n, q, i, st);
}

int MPI_Waitsome(int n, MPI_Request q[], int *out, int i[], MPI_Status st[])
{
    counts[WAITSOME]++;
    return PMPI_Waitsome(n, q, out, i, st);
}

int MPI_Test(MPI_Request *q, int *flag, MPI_Status *st)
{
    counts[TEST]++;
    return PMPI_Test(q, flag, st);
}

int MPI_Testall(int n, MPI_Request q[], int *flag, MPI_Status st[])
{
    counts[TESTALL]++;
    return PMPI_Testall(n, q, flag, st);
}

int MPI_Testany(int n, MPI_Request q[], int *i, int *flag, MPI_Status *st)
{
    counts[TESTANY]++;
    return PMPI_Testany(n, q, i, flag, st);
}

int MPI_Finalize(void)
{
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = getenv("TOPOFOAM_MPICOUNT_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/mpicount.%d", dir && *dir ? dir : ".", rank);
    FILE *out = fopen(path, "w");
    if (out == NULL)
    {
        fprintf(stderr, "mpicount: cannot write %s: counts of rank %d lost\n", path, rank);
    }
    else
    {
        for (int k = 0; k < NKINDS; k++)
        {
            if (counts[k])
            {
                fprintf(out, "%s %llu\n", names[k], counts[k]);
            }
        }
        for (int k = 0; k < NPEERKINDS; k++)
        {
            for (int d = 0; peers[k] != NULL && d < worldSize; d++)
            {
                if (peers[k][d])
                {
                    fprintf(out, "peer %s %d %llu\n", names[peerKinds[k]], d, peers[k][d]);
                }
            }
        }
        fclose(out);
    }
    return PMPI_Finalize();
}
