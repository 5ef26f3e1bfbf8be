/*
 * fabric: an inter-node latency for the emulated cluster (a PMPI interposer, preloaded).
 *
 * The emulated nodes are network namespaces of one machine: their links cost what a bridge
 * costs. tc's token bucket gives them a bandwidth (localsite/cluster.py), but these kernels
 * have no netem, so a latency is added here (topofoam/fabric.py names the profiles):
 *
 *  - a message of m bytes to a rank on another node leaves L + m / B later. Sends posted one
 *    after another without a wait between them (a halo exchange's Isends) share the L, as
 *    messages in flight at once do, and queue for the B, as on one link. A blocking send is
 *    a burst of its own. Messages larger than the token bucket's burst (BUCKET) get no B
 *    here: the bucket itself limits them.
 *  - a collective over ranks on k > 1 nodes starts ceil(log2 k) L later (all-to-alls:
 *    (k - 1) L), on every rank, so it ends that much later.
 *  - a non-blocking allreduce completes no earlier than ceil(log2 k) L after it was posted:
 *    a wait waits until then, a test says "not yet"; work between the two hides it.
 *
 * The sender waits before it posts (polling, as MPI waits), so unlike a real fabric it cannot
 * compute while its message is on its way.
 *
 * TOPOFOAM_FABRIC_LATENCY_US: L in microseconds (unset or 0: no delay), and
 * TOPOFOAM_FABRIC_MBYTES: B in MB/s (unset: messages cost L only). The node of a rank is
 * its MPI processor name (each emulated node has its own host name). Every MPI function is
 * reached through dlsym(RTLD_NEXT), so this stacks with mpicount (listed first in
 * LD_PRELOAD), and the library does not link libmpi: preloaded into a job's shell or srun,
 * it is never called.
 *
 * TOPOFOAM_FABRIC_LATENCY_FACTORS: nodes whose latency is a multiple of L, ``node3=2``
 * (comma-separated; a fault injected on purpose): a message to or from such a node waits
 * the larger factor of its two ends times L, a collective over it the largest of its nodes'.
 *
 * TOPOFOAM_FABRIC_ACCOUNT_DIR: where each rank writes, at MPI_Finalize, what it added
 * (fabric.<rank>: sends and collectives delayed, and the delay each added, as scheduled):
 * the delay the interposer controls, which a test can check exactly, unlike a wall-clock
 * time that anything else on the machine lengthens.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#define NEXT(name) \
    static __typeof__(&name) next_##name; \
    if (!next_##name) next_##name = (__typeof__(&name)) dlsym(RTLD_NEXT, #name)

#define PMPI(name) \
    static __typeof__(&name) p_##name; \
    if (!p_##name) p_##name = (__typeof__(&name)) dlsym(RTLD_DEFAULT, #name)

/*
 * Open MPI's handles are addresses of its objects: naming them here would make the loader
 * look for libmpi in every preloaded process. They are looked up once MPI is there.
 */
#ifdef OPEN_MPI
#define WORLD_HANDLE ((MPI_Comm) dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world"))
#define CHAR_HANDLE ((MPI_Datatype) dlsym(RTLD_DEFAULT, "ompi_mpi_char"))
#else
#define WORLD_HANDLE MPI_COMM_WORLD
#define CHAR_HANDLE MPI_CHAR
#endif
static MPI_Comm world;

/* tc's burst on the emulated links (localsite/cluster.py): larger messages are limited there */
#define BUCKET 65536

static double latency = 0;      /* seconds, one way */
static double perByte = 0;      /* seconds per byte: 1 / B */
static int worldSize = 0;
static int *nodeOf = NULL;      /* node index of each world rank */
static double *factorOf = NULL; /* latency factor of each world rank's node */
static int burst = 0;           /* sends posted since the last wait */
static double burstLeaves = 0;  /* when the burst's messages leave */
static double burstFactor = 1;  /* the latency factor the burst waits */

/* Non-blocking allreduces not yet due */
#define PENDING 256
static MPI_Request pendingRequest[PENDING];
static double pendingDue[PENDING];
static int nPending = 0;

/* World ranks of communicators met (a handle freed and reused is caught by its size) */
#define COMMS 32
static MPI_Comm commHandle[COMMS];
static int commSize[COMMS];
static int commNodes[COMMS];
static double commFactor[COMMS];
static int *commWorld[COMMS];
static int nComms = 0;

/* What was added, as scheduled (TOPOFOAM_FABRIC_ACCOUNT_DIR) */
static long sendsDelayed = 0;
static double sendDelayAdded = 0;
static long collectivesDelayed = 0;
static double collectiveDelayAdded = 0;


static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9*t.tv_nsec;
}


/*
 * Wait as an MPI rank waits for a message: polling, and yielding the core between polls
 * (Open MPI's mpi_yield_when_idle does the same). A sleep would be exact only on idle
 * cores: a woken sleeper waits for the scheduler's wake-up granularity behind ranks that
 * poll, and round trips of 2 x 50 us took 3 ms (measured here).
 */
static void waitUntil(double when)
{
    while (now() < when)
    {
        sched_yield();
    }
}


/* The latency factor that the list "node3=2,node1=1.5" gives host (1 if none). */
static double nodeFactor(const char *list, const char *host)
{
    const size_t n = strlen(host);
    for (const char *p = list; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL)
    {
        while (*p == ' ')
        {
            p++;
        }
        if (!strncmp(p, host, n) && p[n] == '=' && atof(p + n + 1) > 0)
        {
            return atof(p + n + 1);
        }
    }
    return 1;
}


static void setUp(void)
{
    const char *text = getenv("TOPOFOAM_FABRIC_LATENCY_US");
    latency = text && *text ? atof(text)*1e-6 : 0;
    if (latency <= 0)
    {
        latency = 0;
        return;
    }
    const char *rate = getenv("TOPOFOAM_FABRIC_MBYTES");
    perByte = rate && atof(rate) > 0 ? 1e-6/atof(rate) : 0;
    PMPI(PMPI_Comm_size);
    PMPI(PMPI_Get_processor_name);
    PMPI(PMPI_Allgather);
    world = WORLD_HANDLE;
    p_PMPI_Comm_size(world, &worldSize);
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int length = 0;
    p_PMPI_Get_processor_name(name, &length);
    char *names = calloc((size_t) worldSize, MPI_MAX_PROCESSOR_NAME);
    nodeOf = malloc(sizeof(int)*(size_t) worldSize);
    p_PMPI_Allgather
    (
        name, MPI_MAX_PROCESSOR_NAME, CHAR_HANDLE,
        names, MPI_MAX_PROCESSOR_NAME, CHAR_HANDLE, world
    );
    factorOf = malloc(sizeof(double)*(size_t) worldSize);
    const char *factors = getenv("TOPOFOAM_FABRIC_LATENCY_FACTORS");
    for (int r = 0; r < worldSize; r++)
    {
        factorOf[r] = nodeFactor(factors, names + (size_t) r*MPI_MAX_PROCESSOR_NAME);
    }
    for (int r = 0; r < worldSize; r++)
    {
        nodeOf[r] = r;
        for (int s = 0; s < r; s++)
        {
            if (!strcmp(names + (size_t) r*MPI_MAX_PROCESSOR_NAME,
                        names + (size_t) s*MPI_MAX_PROCESSOR_NAME))
            {
                nodeOf[r] = nodeOf[s];
                break;
            }
        }
    }
    free(names);
}


/* The slot of communicator c in the cache: its world ranks and how many nodes they span. */
static int commSlot(MPI_Comm c)
{
    PMPI(PMPI_Comm_size);
    int size = 0;
    p_PMPI_Comm_size(c, &size);
    int slot = -1;
    for (int i = 0; i < nComms; i++)
    {
        if (commHandle[i] == c)
        {
            if (commSize[i] == size)
            {
                return i;
            }
            slot = i;
            break;
        }
    }
    if (slot < 0)
    {
        slot = nComms < COMMS ? nComms++ : (c == world ? 0 : COMMS - 1);
    }
    free(commWorld[slot]);
    commHandle[slot] = c;
    commSize[slot] = size;
    commWorld[slot] = malloc(sizeof(int)*(size_t) size);

    PMPI(PMPI_Comm_group);
    PMPI(PMPI_Group_translate_ranks);
    PMPI(PMPI_Group_free);
    MPI_Group group, worldGroup;
    p_PMPI_Comm_group(c, &group);
    p_PMPI_Comm_group(world, &worldGroup);
    int *ranks = malloc(sizeof(int)*(size_t) size);
    for (int r = 0; r < size; r++)
    {
        ranks[r] = r;
    }
    p_PMPI_Group_translate_ranks(group, size, ranks, worldGroup, commWorld[slot]);
    p_PMPI_Group_free(&group);
    p_PMPI_Group_free(&worldGroup);
    free(ranks);

    int nodes = 0;
    for (int r = 0; r < size; r++)
    {
        int seen = 0;
        for (int s = 0; s < r && !seen; s++)
        {
            seen = nodeOf[commWorld[slot][s]] == nodeOf[commWorld[slot][r]];
        }
        nodes += !seen;
    }
    commNodes[slot] = nodes;
    commFactor[slot] = 1;
    for (int r = 0; r < size; r++)
    {
        if (factorOf[commWorld[slot][r]] > commFactor[slot])
        {
            commFactor[slot] = factorOf[commWorld[slot][r]];
        }
    }
    return slot;
}


/* The latency factor of a message to dest over c: 0 if dest is on this rank's node. */
static double otherNode(int dest, MPI_Comm c)
{
    if (latency == 0 || dest < 0)  /* MPI_PROC_NULL */
    {
        return 0;
    }
    PMPI(PMPI_Comm_rank);
    int rank = 0;
    p_PMPI_Comm_rank(c, &rank);
    int slot = commSlot(c);
    const int to = commWorld[slot][dest], from = commWorld[slot][rank];
    if (nodeOf[to] == nodeOf[from])
    {
        return 0;
    }
    return factorOf[to] > factorOf[from] ? factorOf[to] : factorOf[from];
}


/* A send to another node leaves with the burst it is part of, after the burst's bytes; a
 * burst waits the largest latency among its messages'. */
static void sendDelay(int count, MPI_Datatype t, int dest, MPI_Comm c)
{
    const double factor = otherNode(dest, c);
    if (factor == 0)
    {
        return;
    }
    PMPI(PMPI_Type_size);
    int size = 0;
    p_PMPI_Type_size(t, &size);
    double bytes = (double) count*size;
    if (!burst)
    {
        burst = 1;
        burstFactor = factor;
        burstLeaves = now() + latency*factor;
        sendDelayAdded += latency*factor;
    }
    else if (factor > burstFactor)
    {
        burstLeaves += latency*(factor - burstFactor);
        sendDelayAdded += latency*(factor - burstFactor);
        burstFactor = factor;
    }
    burstLeaves += bytes <= BUCKET ? bytes*perByte : 0;
    sendDelayAdded += bytes <= BUCKET ? bytes*perByte : 0;
    sendsDelayed++;
    waitUntil(burstLeaves);
}


/* The delay of a collective over c: rounds of L between its nodes. */
static double collectiveDelay(MPI_Comm c, int allToAll)
{
    burst = 0;
    if (latency == 0)
    {
        return 0;
    }
    const int slot = commSlot(c);
    int k = commNodes[slot];
    if (k <= 1)
    {
        return 0;
    }
    double delay = latency*commFactor[slot]*(allToAll ? k - 1 : ceil(log2((double) k)));
    collectivesDelayed++;
    collectiveDelayAdded += delay;
    return delay;
}


static void waited(void)
{
    burst = 0;
}


/* When the pending allreduces among q[0..n) are due (0: none is pending). */
static double dueOf(int n, const MPI_Request q[], int drop)
{
    double due = 0;
    for (int i = 0; i < n; i++)
    {
        for (int j = 0; j < nPending; j++)
        {
            if (pendingRequest[j] == q[i])
            {
                if (pendingDue[j] > due)
                {
                    due = pendingDue[j];
                }
                if (drop)
                {
                    pendingRequest[j] = pendingRequest[--nPending];
                    pendingDue[j] = pendingDue[nPending];
                }
                break;
            }
        }
    }
    return due;
}


int MPI_Init(int *argc, char ***argv)
{
    NEXT(MPI_Init);
    int rc = next_MPI_Init(argc, argv);
    setUp();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    NEXT(MPI_Init_thread);
    int rc = next_MPI_Init_thread(argc, argv, required, provided);
    setUp();
    return rc;
}

int MPI_Finalize(void)
{
    NEXT(MPI_Finalize);
    const char *dir = getenv("TOPOFOAM_FABRIC_ACCOUNT_DIR");
    if (dir && *dir)
    {
        PMPI(PMPI_Comm_rank);
        int rank = 0;
        p_PMPI_Comm_rank(WORLD_HANDLE, &rank);
        char path[4096];
        snprintf(path, sizeof path, "%s/fabric.%d", dir, rank);
        FILE *out = fopen(path, "w");
        if (out)
        {
            fprintf(out, "sends_delayed %ld\n", sendsDelayed);
            fprintf(out, "send_delay_us %.3f\n", 1e6*sendDelayAdded);
            fprintf(out, "collectives_delayed %ld\n", collectivesDelayed);
            fprintf(out, "collective_delay_us %.3f\n", 1e6*collectiveDelayAdded);
            fclose(out);
        }
        else
        {
            fprintf(stderr, "fabric: cannot write %s: rank %d's account lost\n", path, rank);
        }
    }
    return next_MPI_Finalize();
}

int MPI_Send(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    NEXT(MPI_Send);
    sendDelay(n, t, dest, c);
    waited();
    return next_MPI_Send(b, n, t, dest, tag, c);
}

int MPI_Bsend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    NEXT(MPI_Bsend);
    sendDelay(n, t, dest, c);
    waited();
    return next_MPI_Bsend(b, n, t, dest, tag, c);
}

int MPI_Ssend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    NEXT(MPI_Ssend);
    sendDelay(n, t, dest, c);
    waited();
    return next_MPI_Ssend(b, n, t, dest, tag, c);
}

int MPI_Rsend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c)
{
    NEXT(MPI_Rsend);
    sendDelay(n, t, dest, c);
    waited();
    return next_MPI_Rsend(b, n, t, dest, tag, c);
}

int MPI_Isend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
              MPI_Request *q)
{
    NEXT(MPI_Isend);
    sendDelay(n, t, dest, c);
    return next_MPI_Isend(b, n, t, dest, tag, c, q);
}

int MPI_Issend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
               MPI_Request *q)
{
    NEXT(MPI_Issend);
    sendDelay(n, t, dest, c);
    return next_MPI_Issend(b, n, t, dest, tag, c, q);
}

int MPI_Ibsend(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
               MPI_Request *q)
{
    NEXT(MPI_Ibsend);
    sendDelay(n, t, dest, c);
    return next_MPI_Ibsend(b, n, t, dest, tag, c, q);
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st)
{
    NEXT(MPI_Recv);
    waited();
    return next_MPI_Recv(b, n, t, src, tag, c, st);
}

int MPI_Probe(int src, int tag, MPI_Comm c, MPI_Status *st)
{
    NEXT(MPI_Probe);
    waited();
    return next_MPI_Probe(src, tag, c, st);
}

int MPI_Wait(MPI_Request *q, MPI_Status *st)
{
    NEXT(MPI_Wait);
    waited();
    waitUntil(dueOf(1, q, 1));
    return next_MPI_Wait(q, st);
}

int MPI_Waitall(int n, MPI_Request q[], MPI_Status st[])
{
    NEXT(MPI_Waitall);
    waited();
    waitUntil(dueOf(n, q, 1));
    return next_MPI_Waitall(n, q, st);
}

/* Any or some: waits until all of the pending ones are due (rare in OpenFOAM). */
int MPI_Waitany(int n, MPI_Request q[], int *i, MPI_Status *st)
{
    NEXT(MPI_Waitany);
    waited();
    waitUntil(dueOf(n, q, 1));
    return next_MPI_Waitany(n, q, i, st);
}

int MPI_Waitsome(int n, MPI_Request q[], int *out, int i[], MPI_Status st[])
{
    NEXT(MPI_Waitsome);
    waited();
    waitUntil(dueOf(n, q, 1));
    return next_MPI_Waitsome(n, q, out, i, st);
}

int MPI_Test(MPI_Request *q, int *flag, MPI_Status *st)
{
    NEXT(MPI_Test);
    waited();
    if (dueOf(1, q, 0) > now())
    {
        *flag = 0;
        return MPI_SUCCESS;
    }
    dueOf(1, q, 1);
    return next_MPI_Test(q, flag, st);
}

int MPI_Testall(int n, MPI_Request q[], int *flag, MPI_Status st[])
{
    NEXT(MPI_Testall);
    waited();
    if (dueOf(n, q, 0) > now())
    {
        *flag = 0;
        return MPI_SUCCESS;
    }
    dueOf(n, q, 1);
    return next_MPI_Testall(n, q, flag, st);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c)
{
    NEXT(MPI_Allreduce);
    waitUntil(now() + collectiveDelay(c, 0));
    return next_MPI_Allreduce(s, r, n, t, o, c);
}

int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                   MPI_Request *q)
{
    NEXT(MPI_Iallreduce);
    double delay = collectiveDelay(c, 0);
    int rc = next_MPI_Iallreduce(s, r, n, t, o, c, q);
    if (delay > 0)
    {
        if (nPending < PENDING)
        {
            pendingRequest[nPending] = *q;
            pendingDue[nPending++] = now() + delay;
        }
        else
        {
            waitUntil(now() + delay);  /* too many in flight: waited for at once */
        }
    }
    return rc;
}

int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c)
{
    NEXT(MPI_Reduce);
    waitUntil(now() + collectiveDelay(c, 0));
    return next_MPI_Reduce(s, r, n, t, o, root, c);
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    NEXT(MPI_Bcast);
    waitUntil(now() + collectiveDelay(c, 0));
    return next_MPI_Bcast(b, n, t, root, c);
}

int MPI_Barrier(MPI_Comm c)
{
    NEXT(MPI_Barrier);
    waitUntil(now() + collectiveDelay(c, 0));
    return next_MPI_Barrier(c);
}

int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
               int root, MPI_Comm c)
{
    NEXT(MPI_Gather);
    waitUntil(now() + collectiveDelay(c, 0));
    return next_MPI_Gather(s, sn, st, r, rn, rt, root, c);
}

int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                int root, MPI_Comm c)
{
    NEXT(MPI_Scatter);
    waitUntil(now() + collectiveDelay(c, 0));
    return next_MPI_Scatter(s, sn, st, r, rn, rt, root, c);
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                  MPI_Comm c)
{
    NEXT(MPI_Allgather);
    waitUntil(now() + collectiveDelay(c, 0));
    return next_MPI_Allgather(s, sn, st, r, rn, rt, c);
}

int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                 MPI_Comm c)
{
    NEXT(MPI_Alltoall);
    waitUntil(now() + collectiveDelay(c, 1));
    return next_MPI_Alltoall(s, sn, st, r, rn, rt, c);
}

int MPI_Alltoallv(const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r,
                  const int *rn, const int *rd, MPI_Datatype rt, MPI_Comm c)
{
    NEXT(MPI_Alltoallv);
    waitUntil(now() + collectiveDelay(c, 1));
    return next_MPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, c);
}
