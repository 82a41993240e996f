// SPDX-License-Identifier: GPL-2.0
/* The kernel side of iotrace: IO system calls and io_uring requests of the watched processes, one record
 * each, into a BPF ring buffer that the reader polls.
 *
 * Why not bpftrace: its printf goes through a perf buffer whose every event wakes the reader with an
 * irq_work, a self-IPI that is a VM exit on a virtualized host, paid by the traced thread (see
 * bench/capture_overhead.py). Here records are submitted with BPF_RB_NO_WAKEUP and the reader polls. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "iotrace.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __s32 group_pgid = 0;  /* processes exec'd in this process group are watched */
const volatile __s32 own_pid = 0;     /* ...except the reader itself */

__u64 lost_records = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __s32);
	__type(value, __u8);
} watched SEC(".maps");

struct pending_call {
	__u64 start_ns;
	__s64 fd;
	__s64 offset;
	__s64 size;
	__u64 path; /* openat's filename, a user pointer */
	__u32 call;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __s32); /* tid */
	__type(value, struct pending_call);
} pending SEC(".maps");

struct pending_request {
	__u64 start_ns;
	__s32 tid;
	__s32 pid;
	__s64 fd;
	__s64 offset;
	__s64 size;
	__u32 opcode;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* the request's address */
	__type(value, struct pending_request);
} requests SEC(".maps");

/* A client's reads of its stdin (the dump the worker pipes in, 4 KiB at a time) are counted per thread,
 * not recorded one by one: they were two thirds of a restore's records. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __s32);
	__type(value, struct stdin_count);
} stdin_reads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __s32);
	__type(value, __u8);
} reading_stdin SEC(".maps");

static __always_inline bool is_watched(__s32 pid)
{
	return bpf_map_lookup_elem(&watched, &pid) != NULL;
}

static __always_inline int call_entered(__u32 call, __s64 fd, __s64 offset, __s64 size, __u64 path)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s32 pid = id >> 32, tid = (__u32)id;
	if (!is_watched(pid))
		return 0;
	if (call == CALL_READ && fd == 0) {
		__u8 one = 1;
		bpf_map_update_elem(&reading_stdin, &tid, &one, BPF_ANY);
		return 0;
	}
	struct pending_call entry = {
		.start_ns = bpf_ktime_get_ns(), .fd = fd, .offset = offset, .size = size, .path = path, .call = call,
	};
	bpf_map_update_elem(&pending, &tid, &entry, BPF_ANY);
	return 0;
}

static __always_inline int call_returned(__s64 result)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s32 pid = id >> 32, tid = (__u32)id;
	struct pending_call *entry = bpf_map_lookup_elem(&pending, &tid);
	if (!entry) {
		if (bpf_map_lookup_elem(&reading_stdin, &tid)) {
			struct stdin_count zero = {}, *count;
			bpf_map_update_elem(&stdin_reads, &tid, &zero, BPF_NOEXIST);
			count = bpf_map_lookup_elem(&stdin_reads, &tid);
			if (count) {
				count->reads += 1;
				count->bytes += result > 0 ? result : 0;
			}
			bpf_map_delete_elem(&reading_stdin, &tid);
		}
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	struct io_record *record;
	if (entry->call == CALL_OPENAT) {
		struct open_record *open = bpf_ringbuf_reserve(&records, sizeof(*open), 0);
		if (open) {
			bpf_probe_read_user_str(open->path, sizeof(open->path), (const char *)entry->path);
			open->io.tag = TAG_OPEN;
		}
		record = (struct io_record *)open;
	} else {
		record = bpf_ringbuf_reserve(&records, sizeof(*record), 0);
		if (record)
			record->tag = TAG_SYSCALL;
	}
	if (!record) {
		__sync_fetch_and_add(&lost_records, 1);
	} else {
		record->call = entry->call;
		record->tid = tid;
		record->pid = pid;
		record->start_ns = entry->start_ns;
		record->duration_ns = now - entry->start_ns;
		record->fd = entry->fd;
		record->offset = entry->offset;
		record->size = entry->size;
		record->result = result;
		bpf_ringbuf_submit(record, BPF_RB_NO_WAKEUP);
	}
	bpf_map_delete_elem(&pending, &tid);
	return 0;
}

/* One enter and one exit program per call; args[] holds the call's arguments in order, the descriptor
 * first. An argument index of -1: the call has no such argument. */
#define TRACE_CALL(name, call, offset_arg, size_arg, path_arg)                                          \
	SEC("tracepoint/syscalls/sys_enter_" #name)                                                      \
	int enter_##name(struct trace_event_raw_sys_enter *ctx)                                           \
	{                                                                                                 \
		return call_entered(call, (__s32)ctx->args[0], offset_arg < 0 ? -1 : (__s64)ctx->args[offset_arg & 7], \
				    size_arg < 0 ? -1 : (__s64)ctx->args[size_arg & 7],                      \
				    path_arg < 0 ? 0 : ctx->args[path_arg & 7]);                               \
	}                                                                                                 \
	SEC("tracepoint/syscalls/sys_exit_" #name)                                                       \
	int exit_##name(struct trace_event_raw_sys_exit *ctx)                                             \
	{                                                                                                 \
		return call_returned(ctx->ret);                                                          \
	}

/*         name             call                  offset size path */
TRACE_CALL(read,            CALL_READ,            -1,    2,   -1)
TRACE_CALL(pread64,         CALL_PREAD64,         3,     2,   -1)
TRACE_CALL(readv,           CALL_READV,           -1,    -1,  -1)
TRACE_CALL(preadv,          CALL_PREADV,          3,     -1,  -1)
TRACE_CALL(write,           CALL_WRITE,           -1,    2,   -1)
TRACE_CALL(pwrite64,        CALL_PWRITE64,        3,     2,   -1)
TRACE_CALL(writev,          CALL_WRITEV,          -1,    -1,  -1)
TRACE_CALL(pwritev,         CALL_PWRITEV,         3,     -1,  -1)
TRACE_CALL(recvfrom,        CALL_RECVFROM,        -1,    2,   -1)
TRACE_CALL(sendto,          CALL_SENDTO,          -1,    2,   -1)
TRACE_CALL(fsync,           CALL_FSYNC,           -1,    -1,  -1)
TRACE_CALL(fdatasync,       CALL_FDATASYNC,       -1,    -1,  -1)
TRACE_CALL(sync_file_range, CALL_SYNC_FILE_RANGE, 1,     2,   -1)
TRACE_CALL(fallocate,       CALL_FALLOCATE,       2,     3,   -1)
TRACE_CALL(close,           CALL_CLOSE,           -1,    -1,  -1)
TRACE_CALL(openat,          CALL_OPENAT,          -1,    -1,  1)

/* io_uring opcodes (include/uapi/linux/io_uring.h) reported with file, offset and size: the keys of
 * IO_URING_OPS in worker/capture/ebpf.py, which names them. */
#define URING_READV 1
#define URING_WRITEV 2

static __always_inline bool uring_op_reported(__u8 op)
{
	return op == 1 || op == 2 || op == 3 || op == 4 || op == 5 || op == 8 || op == 22 || op == 23;
}

SEC("tracepoint/io_uring/io_uring_submit_req")
int uring_submitted(struct trace_event_raw_io_uring_submit_req *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s32 pid = id >> 32;
	__u8 op = ctx->opcode;
	if (!uring_op_reported(op) || !is_watched(pid))
		return 0;
	/* The request's command area, its first member, is a struct io_rw for reads and writes. */
	struct io_kiocb *req = ctx->req;
	struct io_rw *rw = (struct io_rw *)req;
	struct pending_request entry = {
		.start_ns = bpf_ktime_get_ns(), .tid = (__u32)id, .pid = pid, .opcode = op,
		.fd = BPF_CORE_READ(req, cqe.fd), .offset = BPF_CORE_READ(rw, kiocb.ki_pos),
	};
	if (op == URING_READV || op == URING_WRITEV) {
		struct io_async_rw *async = BPF_CORE_READ(req, async_data);
		entry.size = async ? BPF_CORE_READ(async, iter.count) : -1;
	} else {
		entry.size = BPF_CORE_READ(rw, len);
	}
	__u64 key = (__u64)req;
	bpf_map_update_elem(&requests, &key, &entry, BPF_ANY);
	return 0;
}

SEC("tracepoint/io_uring/io_uring_complete")
int uring_completed(struct trace_event_raw_io_uring_complete *ctx)
{
	__u64 key = (__u64)ctx->req;
	struct pending_request *entry = bpf_map_lookup_elem(&requests, &key);
	if (!entry)
		return 0;
	struct io_record *record = bpf_ringbuf_reserve(&records, sizeof(*record), 0);
	if (!record) {
		__sync_fetch_and_add(&lost_records, 1);
	} else {
		record->tag = TAG_URING;
		record->call = entry->opcode;
		record->tid = entry->tid;
		record->pid = entry->pid;
		record->start_ns = entry->start_ns;
		record->duration_ns = bpf_ktime_get_ns() - entry->start_ns;
		record->fd = entry->fd;
		record->offset = entry->offset;
		record->size = entry->size;
		record->result = ctx->res;
		bpf_ringbuf_submit(record, BPF_RB_NO_WAKEUP);
	}
	bpf_map_delete_elem(&requests, &key);
	return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int process_exec(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s32 pid = id >> 32;
	if (pid == own_pid)
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__s32 pgid = BPF_CORE_READ(task, signal, pids[PIDTYPE_PGID], numbers[0].nr);
	if (pgid == group_pgid) {
		__u8 one = 1;
		bpf_map_update_elem(&watched, &pid, &one, BPF_ANY);
	}
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int process_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s32 pid = id >> 32, tid = (__u32)id;
	if (pid == tid)
		bpf_map_delete_elem(&watched, &pid);
	return 0;
}
