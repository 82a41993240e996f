/* Records shared by the BPF side (iotrace.bpf.c) and the reader (iotrace.c). */
#ifndef IOTRACE_H
#define IOTRACE_H

#define IOTRACE_PATH_MAX 256

enum record_tag { TAG_SYSCALL = 1, TAG_OPEN = 2, TAG_URING = 3 };

/* The system calls traced, in the order of the reader's name table. */
enum traced_call {
	CALL_READ, CALL_PREAD64, CALL_READV, CALL_PREADV, CALL_WRITE, CALL_PWRITE64, CALL_WRITEV, CALL_PWRITEV,
	CALL_RECVFROM, CALL_SENDTO, CALL_FSYNC, CALL_FDATASYNC, CALL_SYNC_FILE_RANGE, CALL_FALLOCATE, CALL_CLOSE,
	CALL_OPENAT, CALL_COUNT
};

struct io_record {
	__u32 tag;
	__u32 call; /* enum traced_call, or the io_uring opcode */
	__s32 tid;
	__s32 pid;
	__u64 start_ns; /* CLOCK_MONOTONIC */
	__u64 duration_ns;
	__s64 fd;
	__s64 offset; /* -1: the call has none */
	__s64 size;   /* -1: the call has none */
	__s64 result;
};

struct open_record {
	struct io_record io;
	char path[IOTRACE_PATH_MAX];
};

struct stdin_count {
	__u64 reads;
	__u64 bytes;
};

#endif
