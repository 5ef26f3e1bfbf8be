/* The median of a measurement's batches, shared by the programs that measure the fabric
 * (pingpong, screening): each figure they print is the median over batches, so that a batch
 * an interrupt or a preemption hit does not move it. Their builds copy reframe/src whole
 * (sourcesdir), so the include below is found beside the including file. */
#ifndef TOPOFOAM_MEDIAN_H
#define TOPOFOAM_MEDIAN_H

#include <stdlib.h>

static int ascending(const void* a, const void* b)
{
    const double x = *(const double*)a;
    const double y = *(const double*)b;
    return (x > y) - (x < y);
}

/* The median of the n figures in x, which it sorts in place. */
static double median(double* x, int n)
{
    qsort(x, n, sizeof(double), ascending);
    return n % 2 ? x[n/2] : 0.5*(x[n/2 - 1] + x[n/2]);
}

#endif
