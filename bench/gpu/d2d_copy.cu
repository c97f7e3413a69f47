// SPDX-License-Identifier: MIT
/* d2d_copy: the device-to-device copy that bench/gpu_allreduce sets beside
 * the all-reduce on one GPU, where a one-rank all-reduce out of place is a
 * copy and can at best match this one.
 *
 *   d2d_copy [MINBYTES [MAXBYTES [FACTOR [ITERS [WARMUP]]]]]
 *
 * Sizes from MINBYTES to MAXBYTES, multiplied by FACTOR (default 1024 to
 * 1073741824 by 4: nccl_worker's and all_reduce_perf's -b 1K -e 1G -f 4).
 * Each size: WARMUP untimed cudaMemcpyAsync(dst, src, size,
 * cudaMemcpyDeviceToDevice) on one stream, then ITERS timed ones back to
 * back between two CUDA events; the mean per copy is printed.  GB/s = size /
 * time (1e9 B/s), nccl-tests' algbw (a copy reads and writes size bytes, so
 * the memory moves twice that).  The last byte of the largest copy is read
 * back and checked, so a copy that silently did nothing cannot pass for a
 * fast one.
 *
 * Output, nccl-tests style: comment lines starting with '#' (the device,
 * the CUDA runtime and driver), then a row per size: size_bytes time_us
 * GB/s.  Exit status: 0; 1 a CUDA call failed (one line names it, with
 * file:line); 2 bad arguments; 77 no CUDA device visible. */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

enum d2d_result { D2D_OK = 0, D2D_CUDA = 1, D2D_USAGE = 2, D2D_NO_GPU = 77 };

/* On failure the process ends at once: what was allocated goes with it. */
#define CHECK(call)                                                                    \
	do {                                                                           \
		cudaError_t e_ = (call);                                               \
		if (e_ != cudaSuccess) {                                               \
			fprintf(stderr, "d2d_copy: %s:%d: %s: %s\n", __FILE__, __LINE__, \
				#call, cudaGetErrorString(e_));                        \
			return D2D_CUDA;                                               \
		}                                                                      \
	} while (0)

struct d2d_opts {
	size_t minb, maxb, factor;
	int iters, warmup;
};

struct d2d_bufs {
	void *src, *dst;
	cudaStream_t stream;
	cudaEvent_t t0, t1;
};

static const unsigned char FILL = 0x5a;

/* argv[i] as a decimal number within [lo, hi], or dflt where absent;
 * false for anything else. */
static bool arg(int argc, char **argv, int i, unsigned long long lo, unsigned long long hi,
		unsigned long long dflt, unsigned long long *out)
{
	char *end;

	if (i >= argc) {
		*out = dflt;
		return true;
	}
	if (argv[i][0] < '0' || argv[i][0] > '9')
		return false;
	errno = 0;
	*out = strtoull(argv[i], &end, 10);
	return errno == 0 && *end == '\0' && *out >= lo && *out <= hi;
}

static enum d2d_result parse(int argc, char **argv, struct d2d_opts *o)
{
	unsigned long long minb, maxb, factor, iters, warmup;

	if (argc > 6 || !arg(argc, argv, 1, 1, 1ull << 40, 1024, &minb) ||
	    !arg(argc, argv, 2, minb, 1ull << 40, 1ull << 30, &maxb) ||
	    !arg(argc, argv, 3, 2, 1ull << 20, 4, &factor) ||
	    !arg(argc, argv, 4, 1, 1000000, 20, &iters) ||
	    !arg(argc, argv, 5, 0, 1000000, 5, &warmup)) {
		fprintf(stderr, "d2d_copy: usage: d2d_copy [MINBYTES>=1 [MAXBYTES>=MINBYTES "
			"[FACTOR>=2 [ITERS>=1 [WARMUP>=0]]]]]\n");
		return D2D_USAGE;
	}
	*o = (struct d2d_opts){ (size_t)minb, (size_t)maxb, (size_t)factor, (int)iters, (int)warmup };
	return D2D_OK;
}

static enum d2d_result setup(const struct d2d_opts *o, struct d2d_bufs *b)
{
	CHECK(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&b->t0));
	CHECK(cudaEventCreate(&b->t1));
	CHECK(cudaMalloc(&b->src, o->maxb));
	CHECK(cudaMalloc(&b->dst, o->maxb));
	CHECK(cudaMemsetAsync(b->src, FILL, o->maxb, b->stream));
	CHECK(cudaMemsetAsync(b->dst, 0, o->maxb, b->stream));
	CHECK(cudaStreamSynchronize(b->stream));
	return D2D_OK;
}

/* The mean time of one copy of size bytes, in us, after the warm-up. */
static enum d2d_result time_copies(const struct d2d_opts *o, const struct d2d_bufs *b, size_t size,
				   double *us)
{
	float ms = 0;

	for (int i = 0; i < o->warmup; i++)
		CHECK(cudaMemcpyAsync(b->dst, b->src, size, cudaMemcpyDeviceToDevice, b->stream));
	CHECK(cudaEventRecord(b->t0, b->stream));
	for (int i = 0; i < o->iters; i++)
		CHECK(cudaMemcpyAsync(b->dst, b->src, size, cudaMemcpyDeviceToDevice, b->stream));
	CHECK(cudaEventRecord(b->t1, b->stream));
	CHECK(cudaEventSynchronize(b->t1));
	CHECK(cudaEventElapsedTime(&ms, b->t0, b->t1));
	*us = (double)ms * 1000.0 / o->iters;
	return D2D_OK;
}

/* The last byte that the copy of size bytes wrote must be src's. */
static enum d2d_result check_copied(const struct d2d_bufs *b, size_t size)
{
	unsigned char last = 0;

	CHECK(cudaMemcpy(&last, (const unsigned char *)b->dst + size - 1, 1, cudaMemcpyDeviceToHost));
	if (last != FILL) {
		fprintf(stderr, "d2d_copy: byte %zu of the destination is 0x%02x after the copy, "
			"expected 0x%02x\n", size - 1, last, FILL);
		return D2D_CUDA;
	}
	return D2D_OK;
}

static enum d2d_result header(const struct d2d_opts *o)
{
	cudaDeviceProp prop;
	int dev = 0, rt = 0, drv = 0;

	CHECK(cudaGetDevice(&dev));
	CHECK(cudaGetDeviceProperties(&prop, dev));
	CHECK(cudaRuntimeGetVersion(&rt));
	CHECK(cudaDriverGetVersion(&drv));
	printf("# d2d_copy: cudaMemcpyAsync device-to-device, one stream; %s (device %d), "
	       "CUDA runtime %d, driver %d\n", prop.name, dev, rt, drv);
	printf("# warmup %d, timed %d (mean per copy); GB/s = size / time (1e9 B/s)\n", o->warmup,
	       o->iters);
	printf("# %12s %12s %10s\n", "size_bytes", "time_us", "GB/s");
	return D2D_OK;
}

static enum d2d_result sweep(const struct d2d_opts *o)
{
	struct d2d_bufs b;
	size_t size = o->minb, last = 0;
	enum d2d_result r;

	if ((r = header(o)) != D2D_OK || (r = setup(o, &b)) != D2D_OK)
		return r;
	for (;;) {
		double us;

		if ((r = time_copies(o, &b, size, &us)) != D2D_OK)
			return r;
		printf("  %12zu %12.2f %10.2f\n", size, us, (double)size / (us * 1e3));
		fflush(stdout);
		last = size;
		if (size > o->maxb / o->factor)
			break;
		size *= o->factor;
	}
	if ((r = check_copied(&b, last)) != D2D_OK)
		return r;
	CHECK(cudaFree(b.src));
	CHECK(cudaFree(b.dst));
	return D2D_OK;
}

int main(int argc, char **argv)
{
	struct d2d_opts o;
	enum d2d_result r;
	int n = 0;
	cudaError_t e;

	if ((r = parse(argc, argv, &o)) != D2D_OK)
		return r;
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		fprintf(stderr, "d2d_copy: no CUDA device is visible (cudaGetDeviceCount: %s)\n",
			e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return D2D_NO_GPU;
	}
	CHECK(cudaSetDevice(0));
	return sweep(&o);
}
