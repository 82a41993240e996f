/* iotrace: per-operation IO records of the watched processes, printed one line each, for the eBPF capture
 * (worker/capture/ebpf.py parses the lines).
 *
 *     iotrace [PID...]
 *
 * Watches the PIDs given and every process exec'd in iotrace's own process group (the job's). Prints READY
 * once the probes are attached, then, until SIGINT or SIGTERM:
 *     S tid pid start_ns duration_ns call fd offset size result     a system call on a descriptor
 *     O tid pid start_ns duration_ns result path                      openat
 *     U tid pid start_ns duration_ns opcode fd offset size result     an io_uring request
 * and at the end the per-thread counts of stdin reads (@stdin_reads[tid]: N, @stdin_bytes[tid]: N) and,
 * when the ring buffer overflowed, "Lost N events". Times are CLOCK_MONOTONIC nanoseconds.
 *
 * The ring buffer is polled every POLL_INTERVAL_US rather than waited on: a wakeup per record is what made
 * bpftrace costly for the traced threads. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "iotrace.h"
#include "iotrace.skel.h"

#define POLL_INTERVAL_US 20000

static const char *const CALL_NAMES[CALL_COUNT] = {
	[CALL_READ] = "read", [CALL_PREAD64] = "pread64", [CALL_READV] = "readv", [CALL_PREADV] = "preadv",
	[CALL_WRITE] = "write", [CALL_PWRITE64] = "pwrite64", [CALL_WRITEV] = "writev",
	[CALL_PWRITEV] = "pwritev", [CALL_RECVFROM] = "recvfrom", [CALL_SENDTO] = "sendto",
	[CALL_FSYNC] = "fsync", [CALL_FDATASYNC] = "fdatasync", [CALL_SYNC_FILE_RANGE] = "sync_file_range",
	[CALL_FALLOCATE] = "fallocate", [CALL_CLOSE] = "close", [CALL_OPENAT] = "openat",
};

static volatile sig_atomic_t stopping;

static void on_signal(int signo)
{
	(void)signo;
	stopping = 1;
}

static int print_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	const struct io_record *r = data;
	if (size < sizeof(*r))
		return 0;
	switch (r->tag) {
	case TAG_SYSCALL:
		if (r->call >= CALL_COUNT)
			return 0;
		printf("S %d %d %llu %llu %s %lld %lld %lld %lld\n", r->tid, r->pid, (unsigned long long)r->start_ns,
		       (unsigned long long)r->duration_ns, CALL_NAMES[r->call], (long long)r->fd, (long long)r->offset,
		       (long long)r->size, (long long)r->result);
		break;
	case TAG_OPEN: {
		const struct open_record *o = data;
		if (size < sizeof(*o))
			return 0;
		char path[IOTRACE_PATH_MAX];
		memcpy(path, o->path, sizeof(path));
		path[sizeof(path) - 1] = '\0';
		for (char *c = path; *c; c++)
			if (*c == '\n')
				*c = '?'; /* one record per line */
		printf("O %d %d %llu %llu %lld %s\n", r->tid, r->pid, (unsigned long long)r->start_ns,
		       (unsigned long long)r->duration_ns, (long long)r->result, path);
		break;
	}
	case TAG_URING:
		printf("U %d %d %llu %llu %u %lld %lld %lld %lld\n", r->tid, r->pid, (unsigned long long)r->start_ns,
		       (unsigned long long)r->duration_ns, r->call, (long long)r->fd, (long long)r->offset,
		       (long long)r->size, (long long)r->result);
		break;
	}
	return 0;
}

static void print_stdin_counts(int map_fd)
{
	__s32 key, next;
	__s32 *previous = NULL;
	struct stdin_count count;
	while (bpf_map_get_next_key(map_fd, previous, &next) == 0) {
		if (bpf_map_lookup_elem(map_fd, &next, &count) == 0) {
			printf("@stdin_reads[%d]: %llu\n", next, (unsigned long long)count.reads);
			printf("@stdin_bytes[%d]: %llu\n", next, (unsigned long long)count.bytes);
		}
		key = next;
		previous = &key;
	}
}

static int silent(enum libbpf_print_level level, const char *format, va_list args)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, format, args);
	return 0;
}

int main(int argc, char **argv)
{
	static char out_buffer[1 << 20];
	setvbuf(stdout, out_buffer, _IOFBF, sizeof(out_buffer));
	libbpf_set_print(silent);

	struct iotrace_bpf *skel = iotrace_bpf__open();
	if (!skel) {
		fprintf(stderr, "iotrace: cannot open the BPF program: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->group_pgid = getpgrp();
	skel->rodata->own_pid = getpid();
	int err = iotrace_bpf__load(skel);
	if (err) {
		fprintf(stderr, "iotrace: the kernel refused the BPF program: %s\n", strerror(-err));
		return 1;
	}
	__u8 one = 1;
	for (int i = 1; i < argc; i++) {
		char *end;
		long pid = strtol(argv[i], &end, 10);
		if (*end || pid <= 0) {
			fprintf(stderr, "iotrace: not a process id: %s\n", argv[i]);
			return 2;
		}
		__s32 key = (__s32)pid;
		bpf_map_update_elem(bpf_map__fd(skel->maps.watched), &key, &one, BPF_ANY);
	}
	err = iotrace_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "iotrace: attaching the probes failed: %s\n", strerror(-err));
		return 1;
	}
	struct ring_buffer *ring = ring_buffer__new(bpf_map__fd(skel->maps.records), print_record, NULL, NULL);
	if (!ring) {
		fprintf(stderr, "iotrace: cannot map the ring buffer: %s\n", strerror(errno));
		return 1;
	}
	struct sigaction action = {.sa_handler = on_signal};
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	printf("READY\n");
	fflush(stdout);

	while (!stopping) {
		int consumed = ring_buffer__consume(ring);
		if (consumed < 0 && consumed != -EINTR) {
			fprintf(stderr, "iotrace: reading the ring buffer failed: %s\n", strerror(-consumed));
			break;
		}
		if (consumed > 0)
			fflush(stdout);
		usleep(POLL_INTERVAL_US);
	}
	iotrace_bpf__detach(skel);
	ring_buffer__consume(ring);
	print_stdin_counts(bpf_map__fd(skel->maps.stdin_reads));
	if (skel->bss->lost_records)
		printf("Lost %llu events\n", (unsigned long long)skel->bss->lost_records);
	fflush(stdout);
	ring_buffer__free(ring);
	iotrace_bpf__destroy(skel);
	return 0;
}
