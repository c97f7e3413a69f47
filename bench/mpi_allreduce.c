// SPDX-License-Identifier: MIT
/* Baseline for bench/allreduce_sweep: MPI_Allreduce (float32 sum, in
 * place) at the same sizes, timed the same way (warm-up, then the mean of
 * ITERS, the slowest rank's).  Prints "size time_us algbw busbw".
 * Built by the sweep with mpicc when Open MPI's development files exist. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long minb = argc > 1 ? atol(argv[1]) : 4096, maxb = argc > 2 ? atol(argv[2]) : 64L << 20;
	int iters = argc > 3 ? atoi(argv[3]) : 20, warm = argc > 4 ? atoi(argv[4]) : 5, rank, n;
	float *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	buf = malloc((size_t)maxb);
	for (long i = 0; i < maxb / 4; i++)
		buf[i] = 1.0f;
	for (long bytes = minb; bytes <= maxb; bytes *= 2) {
		int count = (int)(bytes / 4);
		double t, tmax;

		for (int i = 0; i < warm; i++)
			MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		t = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		t = (MPI_Wtime() - t) / iters;
		MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			double algbw = (double)bytes / tmax / 1e9;
			printf("%ld %.1f %.3f %.3f\n", bytes, tmax * 1e6, algbw, algbw * 2.0 * (n - 1) / n);
			fflush(stdout);
		}
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
